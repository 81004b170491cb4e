"""Which GEMV path a call takes when it names none: the one measured faster for the format, M and
device kind, else "float".

Tables are keyed by the kind of device (device_kind: the backend, or "opencl-nvidia" for NVIDIA's
OpenCL with warps and mma through PTX). A row is (kind, M > 1, x is f32) -> the formats whose int8dot path (q8_1 quantize + int8 dot,
both launches counted) was faster, from graph-timed cold device time on an NVIDIA H100, 4096 x 14336
(docs/bench/2026-11-23-h100-paths.md; the K-quants: docs/bench/2026-11-24-h100-kquant-vs-llamacpp.md and,
f32 x, docs/bench/2026-11-24-h100-decode-kquant-f32.md);
it is applied to every CUDA arch. The int8dot path quantizes x
to q8_1 (8-bit, one f16 scale per 32 values), as llama.cpp's does: about 0.5% relative error
against 0.02% for the float path. Pass path="float" for the float path's accuracy.
"""

from __future__ import annotations

from types import MappingProxyType

from ..formats import Format
from ..kernels.ops import MAX_M
from ..kernels.ops.gemv import pairs_apply
from ..kernels.ops.int8dot import is_int8dot_weight
from ..kernels.ops.mma import pair_table_fits
from ..kernels.target import Target

_K_AND_FP4 = ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "mxfp4", "nvfp4")  # the super-block rows


def device_kind(target: Target) -> str:
    """The kind of device the tables below are keyed by: the backend, except NVIDIA's OpenCL with its
    warps and warp matrix products through PTX ("opencl-nvidia"), whose speeds are not those of
    other OpenCL devices."""
    if target.backend == "opencl" and target.inline_ptx and target.mma:
        return "opencl-nvidia"
    return target.backend

# (backend, M > 1, x f32) -> formats whose int8dot path was faster there
FASTER_INT8DOT: MappingProxyType[tuple[str, bool, bool], frozenset[str]] = MappingProxyType({
    # M = 1, f16/bf16 x: q4_0 18.1 vs 16.8; q4_k 33.8 vs 16.8 us, q6_k 38.7 vs 31.2 (2026-11-24);
    # q8_0 26.8 vs 27.0 on 2026-11-24 (a tie), then with word loads (H200, run 24 of
    # docs/bench/2026-11-25-h200-mma.md, public calls, f16 x) 24.7 vs 20.9 cold, 24.5 vs 20.5 hot.
    # H200, public calls, f16 x (runs 28-29 of docs/bench/2026-11-26-h200-int8dot-rows.md): q2_k 26.4 vs
    # 18.5, q3_k 39.8 vs 23.7, q5_k 39.6 vs 18.3, mxfp4 33.9 vs 17.2, nvfp4 34.2 vs 19.2
    ("cuda", False, False): frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", *_K_AND_FP4}),
    # f32 x: 34-44 vs 17-27 us; q4_k 27.3 vs 16.9, q6_k 43.1 vs 29.4 (2026-11-24); the rest: run 30
    ("cuda", False, True): frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", *_K_AND_FP4}),
    # M=8: 76-110 vs 36-48 us; q4_k 79.6 vs 42.9, q6_k 82.3 vs 60.5 (2026-11-24); H200 (runs 28-29):
    # q2_k 67.1 vs 40.2, q3_k 89.4 vs 51.8, q5_k 91.3 vs 45.0, mxfp4 73.5 vs 30.9, nvfp4 74.6 vs 56.7
    ("cuda", True, False): frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", *_K_AND_FP4}),
    # q4_k 71.6 vs 33.5, q6_k 88.8 vs 61.3 (2026-11-24); the rest: run 30
    ("cuda", True, True): frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", *_K_AND_FP4}),
    # NVIDIA's OpenCL (H100, run 71, `qkgen bench --backend opencl`, cold, docs/bench/2026-11-26-h100-opencl-warps.md):
    # at M = 1 the float path won every legacy row (q4_0 22.4 vs 32.8 us); at M = 2 int8dot, f16 / f32
    # x: q4_0 29.8 / 30.2 vs 41.2 / 49.7, q4_1 30.1 / 30.1 vs 43.2 / 48.0, q5_0 36.5 / 33.3 vs 47.6 /
    # 65.6, q5_1 31.1 / 31.7 vs 49.4 / 65.0, q8_0 39.3 / 39.6 vs 42.8 / 46.0 (the K-quants: not timed)
    # The super-block rows, f16 x (H200, run 110, public calls, cold, docs/bench/2026-11-27-h200-session24.md;
    # f32 x not timed): int8dot against float at M = 1: q3_k 32.9 vs 40.7, q5_k 32.0 vs 35.7, q6_k 31.6
    # vs 39.6 (q2_k 39.0 vs 31.0, q4_k 43.3 vs 30.5, mxfp4 59.6 vs 37.0, nvfp4 60.6 vs 38.8: float); at
    # M = 4 / 8: q2_k 43.9 / 45.6 vs 58.0 / 83.8, q3_k 39.9 / 53.2 vs 78.1 / 101.3, q4_k 33.4 / 40.0 vs
    # 59.8 / 86.2, q5_k 34.7 / 49.1 vs 73.2 / 100.2, q6_k 42.8 / 56.5 vs 79.8 / 103.1, nvfp4 68.4 / 76.4
    # vs 66.8 / 89.9 (mxfp4 72.6 / 80.9 vs 63.6 / 86.3: float)
    # Each launch there costs about 5 us on the device and 7.7 us between two (H200, runs 220-221,
    # docs/bench/2026-12-03-h200-session43.md): at M = 1 one launch usually beats two.
    ("opencl-nvidia", False, False): frozenset({"q3_k", "q5_k", "q6_k"}),
    ("opencl-nvidia", True, False): frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k",
                                                "q6_k", "nvfp4"}),  # fmt: skip
    ("opencl-nvidia", True, True): frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}),
})  # fmt: skip


# backend -> the layout the int8dot path reads its weight and q8_1 activations in (formats.layout;
# "planes": the weight repacked once per device, a second copy). Measured on the H100 (sweeps 7p and 8,
# docs/bench/2026-11-24-h100-planes-stage-x.md, -int8dot-stage.md): faster only at M = 8 for q4_0/q4_1
# and at M = 1 for q8_0, slower elsewhere at M = 1: "blocks" everywhere. The super-block rows (run 79,
# sweep 37, kernel alone, 4096 x 14336, f16 x, cold): q6_k 23.7 -> 21.6 us at M = 1, mxfp4 17.2 -> 15.9,
# nvfp4 18.6 -> 17.3; slower for q2_k..q5_k (q4_k 14.5 -> 17.0, q5_k 18.5 -> 26.3): not worth a second
# copy of the weight either.
INT8DOT_LAYOUT: MappingProxyType[str, str] = MappingProxyType({})


def default_layout(target: Target) -> str:
    """The int8dot path's layout on this kind of device: "blocks" unless INT8DOT_LAYOUT says otherwise."""
    return INT8DOT_LAYOUT.get(device_kind(target), "blocks")


# (device kind, M > 1) -> the int8dot rows whose x is quantized to q8_1 planes while W stays in
# blocks (gemv_int8dot's x_planes: a q8_1 block is two 16-byte loads and a word or two, not ten word
# loads). H100, run 75 (sweep 33, kernel alone, 4096 x 14336, f16 x, cold, against x in blocks):
# M = 8 q3_k 41.3 -> 36.6 us, q6_k 44.7 -> 39.8; within 5% for the other super-block rows (q5_k
# 53.8 -> 51.5, nvfp4 37.9 -> 39.1); at M = 1 within 5% for them too and slower for the legacy rows
# (q4_0 13.8 -> 15.6, q4_1 15.1 -> 16.4), which take int8mma at M > 1.
INT8DOT_X_PLANES: MappingProxyType[tuple[str, bool], frozenset[str]] = MappingProxyType({
    ("cuda", True): frozenset({"q3_k", "q6_k"}),
})  # fmt: skip


def default_x_planes(target: Target, fmt: Format, m: int) -> bool:
    """Whether the int8dot path reads x in planes (W in blocks) for this row, M and kind of device."""
    return fmt.name in INT8DOT_X_PLANES.get((device_kind(target), m > 1), ())


# backends whose int8dot path quantizes x by lane groups (quantize_q8_1's lane_group: a q8_1 block
# per sub-group, a lane per element, instead of a work-item walking all 32: for M = 1's latency).
# H100, 4096 x 14336, f16 x, hot, both launches (docs/bench/2026-11-25-h100-q8_1-lane-group.md):
# 0.1-0.7 us less in 8 of 10 cases (q4_0 13.2 -> 13.1 at M = 1, 32.2 -> 31.5 at M = 8; q4_1 11.1 ->
# 10.7), equal in one, q5_1 at M = 1 0.2 us more; the GPU suite passed with it on.
INT8DOT_LANE_GROUP: frozenset[str] = frozenset({"cuda"})


def default_lane_group(target: Target) -> bool:
    """Whether the int8dot path's quantize_q8_1 takes a lane group per block on this kind of device."""
    return device_kind(target) in INT8DOT_LANE_GROUP


# backend -> {format: the least M from which its mma path (W decoded to x's f16/bf16, warp matrix
# products) was measured faster than the float and int8dot paths}. NVIDIA H200, 4096 x 14336, f16 x,
# kernel alone, cold (sweeps 9-11, docs/bench/2026-11-25-h200-mma.md; nf4 and fp4 nested). Float ->
# mma at M = 8: nf4 55.3 -> 26.8 us, fp4 55.3 -> 26.6, int8 row 57.4 -> 21.7, int4 row 56.4 -> 20.7,
# int2 row 55.9 -> 22.4, blockwise8 69.7 -> 41.4; nf4 at M = 2 and 4: 29.4 -> 23.2, 37.8 -> 23.7 (the
# mma kernel's time hardly moves with M, the float path's grows). At M = 1 the two are within 5% but
# for int2 row (42.5 -> 21.7). GGUF rows against int8dot (which also quantizes x, a second launch) at
# M = 8: q4_1 32.0 -> 25.8, q4_0 31.8 -> 27.9 (word loads); at M = 2 and 4 int8dot was faster (q4_1
# 15.8 and 20.9 against 25.3 and 25.5); q5_0 within 5%, q8_0 slower (40.4 against 37.9). Public calls
# at M = 8 (both launches of int8dot, run 24): q5_1 36.6 -> 32.5 us cold, 34.6 -> 31.2 hot; run 25
# (two codes at a time): q4_0 34.1 -> 26.1, q8_0 40.0 -> 38.1 (within 5%: int8dot stays). bf16 x (run
# 26, public calls, M = 8, cold): nf4 55.4 -> 26.7, fp4 55.2 -> 26.4, int4 56.5 -> 20.6, q4_0 34.5 ->
# 28.3, q4_1 34.9 -> 26.3, q5_1 36.8 -> 32.6; at M = 1 float and int8dot stayed ahead, as with f16.
# The least M of f16's table is taken for bf16 too (bf16 was timed at M = 1 and 8 only).
# Public calls on every path at M = 4..8 (run 44, docs/bench/2026-11-26-h200-int8mma.md, f16 x, cold):
# q4_0's mma path 21.9 us at M = 4 against int8dot's 24.2 (25.8 against 34.2 at M = 8), so from M = 4;
# q5_1's int8mma path 27.2 us at M = 8 against mma's 32.2, so q5_1 left this table (FASTER_INT8MMA).
# Run 52 (f16 x, public calls, cold): q4_0's int8mma path with W in fragments 20.9 us at M = 4 against
# mma's 22.0 (23.1 against 25.6 at M = 8), so q4_0 left it too. Run 64 (H100, f16 x, public calls,
# x in fragments too, docs/bench/2026-11-26-h100-int8frag-x.md): q4_1's int8mma path 22.8 us at M = 8
# against mma's 26.0, so q4_1 left it: no GGUF row is here now.
# NVIDIA's OpenCL (run 71, H100, f16 x, cold): nf4 nested's mma path 30.9 us at M = 2 against the
# float path's 36.9 (35.8 against 68.5 at M = 8); q4_1's 28.8 at M = 2 against int8dot's 30.1 (30.4
# against int8mma's 32.7 at M = 8). Run 101 (H200, after session 21's PTX f16 helpers and word
# loads, every path of the legacy rows and nf4 nested, f16 x, public calls, cold,
# docs/bench/2026-11-27-h200-session22.md): q4_0's mma path 31.2 / 32.0 / 33.1 us at M = 2 / 4 / 8
# against int8dot's 48.7 / 43.0 / 50.6 and int8mma's 34.3 / 42.9 / 57.4, so q4_0 takes it from M = 2;
# nf4 33.9 against 36.7 at M = 2, q4_1 35.0 against 48.0 (int8mma) at M = 2.
# blockwise8 at M = 1 (H200, qkgen bench, public calls' kernels, cold, runs 142 and 144,
# docs/bench/2026-11-28-h200-session28.md): mma 35.2 us against float 37.7 (4096 x 14336, f16 x),
# 40.9 against 41.4 (8192^2, bf16 x), so from M = 1 as with f32 x.
# int4 from M = 1 since session 33's pair table (H200 run 184, public calls, cold,
# docs/bench/2026-12-02-h200-session34.md): mma 15.3 us against float 17.7 (4096 x 14336, f16 x),
# 18.9 against 19.0 (8192^2, bf16 x), within the float path's error.
# int4 row on NVIDIA's OpenCL from M = 2 (H200, runs 199-200, `qkgen bench --backend opencl`, public
# calls' kernels, f16 x, 4096 x 14336, cold, events around back-to-back launches; the session-39
# doc): mma 31.7 / 32.2 / 32.6 us at M = 2 / 4 / 8 against the float path's 37.1 / 48.2 / 71.3 (31.6
# against 22.1 at M = 1); run 199 at M = 8: 32.9 against 71.8.
FASTER_MMA: MappingProxyType[str, MappingProxyType] = MappingProxyType({
    "cuda": MappingProxyType({"nf4": 2, "fp4": 2, "int8": 2, "int4": 1, "blockwise8": 1, "int2": 1}),
    "opencl-nvidia": MappingProxyType({"nf4": 2, "q4_0": 2, "q4_1": 2, "int4": 2}),
})  # fmt: skip

# The same for f32 x, which the mma kernel rounds to f16 as it loads it. H200, 4096 x 14336, public
# calls, cold (run 30, docs/bench/2026-11-26-h200-int8dot-rows.md): float -> mma nf4 36.2 -> 24.3 us
# at M = 1, 55.1 -> 49.7 at M = 8; int4 row 25.6 -> 22.2 and 55.9 -> 40.7. GGUF rows: int8dot stays
# ahead (q4_0 at M = 8: 34.2 against 50.2; f32 x is twice the bytes every warp reads). H100, run 81
# (sweep 38, kernel alone, cold, 8192^2 / 4096 x 14336 / 14336 x 4096, M = 1, against the float path
# with prefetch): fp4 nested 28.8 / 24.6 / 26.4 against 39.6 / 31.9 / 33.1 us (27.3 against 31.1 at M =
# 2), so fp4 joined; nf4 29.1 / 25.5 / 26.5 against 39.8 / 32.3 / 33.1; int4 row 25.6 / 22.7 / 23.6
# against 26.4 / 21.1 / 21.4, groups of 128 25.9 / 22.7 / 24.2 against 28.2 / 23.3 / 24.7 (mixed:
# int4 stays). The other rows were not timed with f32 x.
# int8 row and blockwise8 from M = 8, with two tiles a warp (MMA_KNOBS; H200 run 90, sweep 42, kernel
# alone, cold): float -> mma 55.6 -> 35.6 us and 66.9 -> 50.3. Since x is rounded once from M = 2
# (MMA_ROUND_X; NVIDIA H100, runs 123-124, public calls, cold), float -> mma: int8 row 37.6 -> 26.1 us
# at M = 2, 39.5 -> 26.2 at M = 4 (23.8 -> 25.4 at M = 1: the float path stays); blockwise8 44.6 ->
# 37.3 at M = 1 (x rounded in the kernel), 44.2 -> 38.6 at M = 2, 50.9 -> 39.7 at M = 4. So int8
# from M = 2 and blockwise8 from M = 1.
# int4 from M = 2 again: with the pair table its M = 1 kernel (x rounded in it) took 27.2 us against
# the float path's 20.5 (H200 run 184, 4096 x 14336, public calls, cold; both trees of that run).
FASTER_MMA_F32: MappingProxyType[str, MappingProxyType] = MappingProxyType({
    "cuda": MappingProxyType({"nf4": 1, "fp4": 1, "int4": 2, "int8": 2, "blockwise8": 1}),
    # NVIDIA's OpenCL (run 71, f32 x): nf4 nested 35.5 against 40.7 us at M = 2, 57.5 against 70.4 at 8
    "opencl-nvidia": MappingProxyType({"nf4": 2}),
})  # fmt: skip


# (backend, x is f32) -> {format: the least M from which its int8mma path (x to q8_1, then int8 warp
# matrix products, both launches) was measured faster than the int8dot, mma and float paths}; f16's
# row serves bf16 x too (bf16 was not timed on this path). NVIDIA H200, 4096 x 14336, public calls,
# cold. q4_1 and q5_1 (W in blocks; run 44, docs/bench/2026-11-26-h200-int8mma.md), int8dot ->
# int8mma: f32 x, M = 5 / 6 / 8: q4_1 26.1 / 28.8 / 34.5 -> 25.3 / 25.6 / 26.0, q5_1 28.7 / 31.5 /
# 36.7 -> 26.5 / 26.7 / 27.1; f16 x: q4_1 28.8 -> 25.6 at M = 6 (mma 25.6), q5_1 28.5 -> 26.4 at M =
# 5 (mma 31.6). q4_0, q5_0 and q8_0 (W in fragments, INT8MMA_FRAGMENTS; run 52,
# docs/bench/2026-11-26-h200-int8frag.md), int8dot -> int8mma, f32 x: q4_0 21.0 -> 20.8 at M = 3,
# 24.1 -> 21.1 at 4, 34.5 -> 23.4 at 8; q5_0 24.8 -> 24.0 at M = 4, 35.8 -> 26.8 at 8 (21.8 -> 23.9
# at 3); q8_0 24.1 -> 23.2 at M = 2, 40.8 -> 28.8 at 8. f16 x: q4_0 at M = 4 20.9 against int8dot's
# 23.8 and mma's 22.0 (23.1, 34.0, 25.6 at M = 8; a tie at 3); q5_0 24.0 against 24.6 at M = 4;
# q8_0 23.5 against 24.3 at M = 2 (hot: that cold figure also timed the repack, see the doc).
# Since x is in fragments too (run 64, NVIDIA H100, every row's W in fragments, public calls,
# docs/bench/2026-11-26-h100-int8frag-x.md): the least M where int8mma was faster cold and hot.
# f32 x, int8dot -> int8mma cold: q4_0 20.3 -> 18.5 at M = 2; q4_1 21.8 -> 20.7 at 3 (20.4 / 20.6 at
# 2); q5_0 23.7 -> 23.3 at 3 (hot 21.5 -> 19.4); q5_1 24.5 -> 23.7 at 3; q8_0 28.8 -> 28.4 at 2. f16
# x: q4_0 20.4 -> 18.5 at 2 (mma 20.3); q4_1 21.9 -> 20.9 at 3; q5_0 23.5 -> 23.3 at 3 (hot 21.4 ->
# 19.3); q5_1 27.1 -> 23.9 at 4 (at 3 slower hot: 23.8 -> 25.1); q8_0 28.8 -> 28.3 at 2.
# NVIDIA's OpenCL (run 71, W in fragments, cold), int8dot -> int8mma, f16 x: q4_0 40.1 -> 31.4 us at
# M = 4 (29.8 / 30.3 at 2), q5_0 38.6 -> 32.9 at 4 (36.5 / 38.0 at 2), q5_1 48.2 -> 41.9 at 8 (36.7
# / 53.2 at 4), q8_0 39.3 -> 36.5 at 2; q4_1 takes the mma path first. f32 x, timed at M = 2 and 8
# only: the same order (the product kernels are those of f16 x; q8_0 39.6 -> 36.7 at 2, q4_0 61.9
# -> 33.4 at 8), and q4_1 47.5 -> 39.0 at 8 (its mma path is slow with f32 x: 57.9). Run 101 (H200,
# f16 x, cold; f32 x not timed again): q5_0's int8dot path stays ahead at every M (34.4 against 40.9
# at M = 4, 46.0 against 48.4 at 8); q8_0's int8mma path from M = 4 (34.0 against int8dot's 39.6;
# at M = 2 40.3 against 34.8); q5_1's at 8 (40.8 against 46.0); q4_0 takes the mma path (FASTER_MMA).
# The super-block rows, W in fragments (gemv_int8frag_sub; H200, runs 105-106, `qkgen bench --op gemv`,
# public calls, both launches, docs/bench/2026-11-27-h200-session24.md), int8dot -> int8mma, f16 x,
# cold (hot): q2_k 27.5 -> 28.8 at M = 4, 36.9 -> 30.1 at 8; q3_k 27.4 -> 26.7 at 3 (hot 23.8 ->
# 24.4), 29.6 -> 26.9 at 4 (26.1 -> 24.3); q4_k 20.6 -> 20.9 at 3, 22.8 -> 21.3 at 4 (18.5 -> 18.5),
# 31.7 -> 23.1 at 8; q5_k 20.8 -> 21.6 at 2, 23.6 -> 21.9 at 3 (20.7 -> 19.5); q6_k 26.2 -> 26.3
# at 2, 28.4 -> 26.7 at 3 (27.4 -> 25.9); mxfp4 23.6 -> 25.7 at 4, 31.3 -> 26.7 at 8 (M = 5..7 not
# timed); nvfp4's int8mma path takes 44 us at every M (int8dot 19.0 at M = 1, 39.5 at 8). f32 x: the
# same least M (q3_k 29.7 -> 27.2 at 4, q5_k 23.6 -> 21.7 at 3, q6_k 28.6 -> 26.7 at 3). M = 5..7
# (run 112, an NVIDIA H100, f16 x; f32 x follows f16's, as it did at every M timed on the H200):
# q2_k 31.4 -> 29.0 at 5 (hot 29.5 -> 26.6), mxfp4 25.7 -> 26.1 at 5 (hot 23.5 -> 22.9), 27.6 -> 26.3
# at 6, 30.4 -> 26.6 at 7.
# Session 38 (H200, run 195, fragbench.py, public calls, f32 x, cold; the session-38 doc): q2_k 23.4 ->
# 19.3 us at M = 2 (its scales folded into its codes); nvfp4 24.6 -> 26.2 at 4, 28.0 -> 26.4 at 5 (38.4
# -> 27.3 at 8); mxfp4 23.4 -> 23.0 at 4 (a tie), 25.0 -> 23.4 at 5. Run 199 (session 39, after the
# integer sub-block scales): q4_k 17.9 -> 18.0 at M = 2 (a tie), 20.4 -> 18.3 at 3 (hot 16.4 -> 16.0);
# q5_k 20.8 -> 19.4 at 2 (hot 19.0 -> 17.6); f16 x follows f32's (not timed again).
_SUB_INT8MMA = {"q2_k": 2, "q3_k": 4, "q4_k": 3, "q5_k": 2, "q6_k": 3, "mxfp4": 5, "nvfp4": 5}
FASTER_INT8MMA: MappingProxyType[tuple[str, bool], MappingProxyType] = MappingProxyType({
    ("cuda", False): MappingProxyType({"q4_0": 2, "q4_1": 3, "q5_0": 3, "q5_1": 4, "q8_0": 2, **_SUB_INT8MMA}),
    ("cuda", True): MappingProxyType({"q4_0": 2, "q4_1": 3, "q5_0": 3, "q5_1": 3, "q8_0": 2, **_SUB_INT8MMA}),
    # the super-block rows with W in fragments (run 110, f16 x, cold; M = 1, 4 and 8 timed): q2_k 38.7
    # against int8dot's 43.9 at M = 4, q3_k 35.8 against 39.9, q4_k 32.5 against 33.4 (hot 32.2 against
    # 43.6), q6_k 36.0 against 42.8; q5_k 32.5 against 49.1 at M = 8 (42.9 against 34.7 at 4); mxfp4
    # 67.9 against the float path's 86.3 at M = 8 (67.7 against 63.6 at 4); nvfp4 never (124-133 us).
    # M = 2 and 3 (run 112, an NVIDIA H100): q4_k 41.4 against 44.4 at 3 (hot 42.8 against 45.3), a tie
    # at 2; int8dot ahead or level for the others (q2_k 34.2 against 38.2 at 2, q5_k 34.4 against 43.4)
    ("opencl-nvidia", False): MappingProxyType({"q5_1": 8, "q8_0": 4, "q2_k": 4, "q3_k": 4, "q4_k": 3, "q5_k": 8,
                                                "q6_k": 4, "mxfp4": 8}),  # fmt: skip
    ("opencl-nvidia", True): MappingProxyType({"q4_0": 4, "q4_1": 8, "q5_0": 4, "q5_1": 8, "q8_0": 2}),
})  # fmt: skip


# backend -> the formats whose int8mma path reads W in its fragments layout (gemv_int8frag, W repacked
# once per device: a second copy of the weight) rather than its blocks (gemv_int8mma). NVIDIA H200,
# 4096 x 14336, f32 x, M = 8, kernel alone, cold (sweeps 26-27, runs 50-51,
# docs/bench/2026-11-26-h200-int8frag.md), blocks -> fragments: q4_0 24.1 -> 20.8 us, q5_0 37.0 ->
# 25.1, q8_0 61.5 -> 26.4; q4_1 23.8 -> 22.6 and q5_1 24.8 -> 25.0 keep their blocks (no second copy
# for 5% or less). With x in its fragments layout too (run 60, NVIDIA H100, public calls, f32 x,
# cold, docs/bench/2026-11-26-h100-int8frag-x.md), blocks -> fragments at M = 4 / 8: q4_1 26.4 / 27.0
# -> 20.6 / 22.5 us, q5_1 27.6 / 28.2 -> 23.9 / 25.9, so every row reads fragments. NVIDIA's OpenCL
# (run 71 against run 69, f16 x, M = 8, blocks -> fragments): q4_0 35.6 -> 30.7, q8_0 70.7 -> 37.9.
# The super-block rows (gemv_int8mma_sub -> gemv_int8frag_sub; H200, run 103, sweep 47, kernel alone,
# f16 x, M = 8, cold, docs/bench/2026-11-27-h200-session24.md): q2_k 39.3 -> 27.7 us, q3_k 69.8 ->
# 25.7, q4_k 67.9 -> 20.9, q5_k 84.4 -> 22.1, q6_k 58.6 -> 26.6, mxfp4 41.6 -> 24.2, nvfp4 50.8 -> 42.6.
# NVIDIA's OpenCL, the super-block rows (run 110, H200, public calls, f16 x, M = 8, cold), blocks ->
# fragments: q2_k 50.1 -> 39.7, q3_k 79.5 -> 36.5, q4_k 78.3 -> 33.2, q5_k 95.3 -> 32.5, q6_k 69.5 ->
# 37.7, mxfp4 72.0 -> 67.9; nvfp4 124.9 -> 132.8 keeps its blocks.
INT8MMA_FRAGMENTS: MappingProxyType[str, frozenset[str]] = MappingProxyType({
    "cuda": frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", *_K_AND_FP4}),
    "opencl-nvidia": frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
                                "mxfp4"}),  # fmt: skip
})  # fmt: skip


# backend -> {format: gemv_int8frag's render knobs where others than the op's defaults (16 warps a
# work-group, turns of 4 blocks, no prefetch) were measured faster}. NVIDIA H100, 4096 x 14336, f32
# x, kernel alone, cold, x in its fragments layout (runs 61-63, sweeps 29-31,
# docs/bench/2026-11-26-h100-int8frag-x.md), M = 8 / M = 4: turns of 8 blocks, 8 warps and the next
# turn's W loaded before this turn's products: q4_0 21.7 / 20.4 -> 17.8 / 16.5 us, q4_1 21.6 / 18.6
# -> 20.4 / 18.5, q5_0 23.7 / 22.4 -> 22.9 / 21.3. q5_1 (23.5 -> 28.9: 162 registers a lane) and q8_0
# (27.3 -> 30.1) keep the defaults. Registers set the cliffs: past 64 a lane, a 16-warp work-group
# no longer fits twice in an SM (prefetch with 16 warps: q4_1 21.6 -> 27.2).
# gemv_int8frag_sub's prefetch (H200, run 194, sweep 78, kernel alone, cold, M = 1 / 8, the session-38
# doc): nvfp4 27.0 / 28.7 -> 24.1 / 25.0 us; mxfp4, 4 warps a group, 22.5 / 24.2 -> 20.2 / 22.4; others
# within 5% (q3_k 25.6 -> 24.5 at M = 8, q4_k 20.4 -> 19.6, q6_k 26.6 -> 25.4), or slower: defaults.
INT8FRAG_KNOBS: MappingProxyType[str, MappingProxyType] = MappingProxyType({
    "cuda": MappingProxyType({**{f: MappingProxyType({"unroll": 2, "wg": 256, "prefetch": True})
                                 for f in ("q4_0", "q4_1", "q5_0")},
                              "nvfp4": MappingProxyType({"prefetch": True}),
                              "mxfp4": MappingProxyType({"prefetch": True, "wg": 128})}),
})  # fmt: skip


def int8frag_knobs(target: Target, fmt: Format) -> dict:
    """gemv_int8frag's (block rows) or gemv_int8frag_sub's (super-block rows) render knobs for this row on this
    kind of device (INT8FRAG_KNOBS; {}: the op's defaults)."""
    return dict(INT8FRAG_KNOBS.get(device_kind(target), {}).get(fmt.name, {}))


# (device kind, x dtype) -> row -> the float GEMV's knobs at M = 1 where they were measured faster
# than its defaults: what the float path takes when it runs (path="float"; on CUDA these rows take
# the mma path by default with f32 x, FASTER_MMA_F32). CUDA, f32 x: prefetch (the next chunk's codes
# and scales loaded before this one's are decoded). H100, runs 76 and 78 (sweeps 34 and 36, kernel
# alone, cold, 8192^2 / 4096 x 14336 / 14336 x 4096): nf4 nested 45.5 / 35.3 / 38.1 -> 40.3 / 32.4 /
# 33.3 us, fp4 nested 44.4 / 35.0 / 38.3 -> 39.9 / 32.2 / 33.5, int4 row 30.2 / 25.7 / 23.6 -> 26.3 /
# 21.2 / 22.0, int4 groups of 128 37.5 / 31.9 / 26.7 -> 28.4 / 23.5 / 25.1. Slower with f16 or bf16
# x (nf4 23.2 -> 23.9), and for q8_0, q6_k and mxfp4 with f32 x (q8_0 30.2 -> 32.3).
# CUDA, f16 / bf16 x: 4 rows a lane group and 4 lane groups a row group, which the M = 1 decode 8
# elements at a time leaves in registers. H200, run 159 (sweeps 58 and 59, kernel alone, cold, the
# tree's defaults -> these): nf4 nested bf16 8192^2 24.6 -> 20.9 us, f16 4096 x 14336 21.2 -> 19.5,
# f16 14336 x 4096 21.3 -> 20.6; fp4 nested bf16 8192^2 25.0 -> 21.4; nf4 f16 4096 x 14336 20.5 ->
# 18.6; int8 row f16 20.9 -> 19.1. int4 row unchanged (17.6 -> 17.5): it keeps its defaults.
_ROWS_4_SLICES_4 = MappingProxyType({"rpw": 4, "slices": 4})
FLOAT_M1_KNOBS: MappingProxyType[tuple[str, str], MappingProxyType] = MappingProxyType({
    ("cuda", "f32"): MappingProxyType({f: MappingProxyType({"prefetch": True}) for f in ("nf4", "fp4", "int4")}),
    **{("cuda", dt): MappingProxyType({f: _ROWS_4_SLICES_4 for f in ("nf4", "fp4", "int8")}) for dt in ("f16", "bf16")},
})  # fmt: skip


# The pairs path (the float GEMV with pairs=True: M = 1, 16-bit x, nf4 and fp4; ops/gemv.py). Products
# in x's 16-bit type: about twice the float path's relative error (check.gemv_error's pairs bound);
# path="float" keeps f32 products. On CUDA: 4 rows a lane group, wg 256, and as many slices (up to 4)
# as keep the warps within about one wave, PAIRS_WAVE warps a SM (the pair table's 33 KB and 64
# registers let 4 work-groups of 256 in). H200, sweeps 63-64 (runs 165-166, nf4 nested, kernel alone,
# cold; docs/bench/2026-12-01-h200-session31.md), the float path at CUDA's M = 1 knobs -> pairs at
# 1 / 2 / 4 slices: 4096 x 14336 bf16 19.6 -> 26.4 / 21.8 / 17.6 us; 6144 x 4096 f16 11.3 -> 11.8 / 10.0
# / 13.3; 8192^2 f16 21.3 -> 19.9 / 18.2 / 21.9; 11008 x 4096 bf16 17.1 -> 14.2 / 18.5 / 20.6;
# 14336 x 4096 f16 20.2 -> 17.6 / 19.5 / 25.2; 28672 x 4096 bf16 36.4 -> 28.9 / 37.3 / 47.4. Below
# PAIRS_MIN_ROWS rows or PAIRS_MIN_WEIGHTS weights the float path stays the default: 2048 x 8192 f16 8.6
# against 9.0 (4 slices), 4096^2 bf16 8.4 against 8.8. int4 takes pairs too (its code values in the
# table) but not by default: 2-9% faster at the same knobs (sweep 66, run 169: row scales 4096 x 14336
# f16 17.3 -> 16.3 us, 8192^2 bf16 19.0 -> 17.3, 14336 x 4096 f16 17.0 -> 16.6; groups of 128 18.0 ->
# 17.1), not worth twice the error of its f32 products.
PAIRS_WAVE = 32
PAIRS_MIN_ROWS, PAIRS_MIN_WEIGHTS = 4096, 1 << 24
FASTER_PAIRS: MappingProxyType[tuple[str, str], frozenset[str]] = MappingProxyType(
    {("cuda", dt): frozenset({"nf4", "fp4"}) for dt in ("f16", "bf16")})  # fmt: skip


def pairs_knobs(target: Target, n: int, sms: int | None) -> dict:
    """The pairs path's render knobs for N rows on this kind of device with `sms` multiprocessors
    ({}: the op's defaults, where none were measured)."""
    if device_kind(target) != "cuda" or not sms:
        return {}
    rpw, slices = 4, 1
    teams = -(-n // rpw)  # of `slices` warps each
    while slices < 4 and teams * slices * 2 <= PAIRS_WAVE * sms:
        slices *= 2
    return {"rpw": rpw, "slices": slices, "wg": 256}


def faster_pairs(target: Target, fmt: Format, m: int, dtype: str, n: int, k: int) -> bool:
    """Whether the pairs path was measured faster than the float path for this row, shape and x."""
    big = n >= PAIRS_MIN_ROWS and n * k > PAIRS_MIN_WEIGHTS
    return big and fmt.name in FASTER_PAIRS.get((device_kind(target), dtype), ()) and pairs_apply(fmt, dtype, target, m)


def float_knobs(target: Target, fmt: Format, m: int, dtype: str) -> dict:
    """The float GEMV's render knobs for this row, M and x dtype on this kind of device ({}: its defaults)."""
    if m != 1:
        return {}
    return dict(FLOAT_M1_KNOBS.get((device_kind(target), dtype), {}).get(fmt.name, {}))


# (device kind, x dtype) -> row -> (least M, gemv_mma's render knobs from that M) where others than
# its defaults were measured faster. f32 x at M = 8: every work-group of one 16-row tile reads all of
# x, twice the bytes of f16 x; two tiles a warp halve that. H200 run 90 (sweep 42, 4096 x 14336,
# kernel alone, cold), tiles 1 -> 2: nf4 nested 51.6 -> 40.5 us, fp4 nested 51.4 -> 41.1, int4 row
# 41.2 -> 37.9, int8 row 45.2 -> 35.6, blockwise8 64.4 -> 50.3 (4 tiles, or 256-lane work-groups:
# slower); at M = 4 nf4 34.9 -> 33.0, at M = 1 24.8 -> 29.8, with f16 x at M = 8 26.7 -> 31.7.
# Where x is rounded by a launch of its own first (MMA_ROUND_X) gemv_mma reads it as f16 x and takes
# f16's knobs, so on CUDA the f32 row serves only calls that keep one launch (gemv(round_x=False)).
MMA_KNOBS: MappingProxyType[tuple[str, str], MappingProxyType] = MappingProxyType({
    ("cuda", "f32"): MappingProxyType({f: (8, MappingProxyType({"tiles": 2}))
                                       for f in ("nf4", "fp4", "int4", "int8", "blockwise8")}),
})  # fmt: skip


# device kind -> rows whose mma path takes the byte-pair table (gemv_mma's pairs: each code byte's two
# values unscaled in one table read, a piece's products scaled once) where their weight's rows allow
# it (ops.mma.pair_table_fits). NVIDIA H200, 2026-12-02, runs 178-179 (sweeps 75-76, kernels alone,
# cold, float decode -> pair table): nf4 nested f16 4096 x 14336 M = 1 22.4 -> 18.2 us, M = 8 25.9 ->
# 19.4; bf16 8192^2 26.3 -> 22.8 and 30.5 -> 25.1; bf16 14336 x 4096 23.7 -> 23.8 and 27.1 -> 25.6; nf4
# M = 8 26.4 -> 19.8, fp4 nested 26.6 -> 19.8; int4 row M = 1 20.2 -> 15.5, M = 8 20.7 -> 19.6; nf4
# nested f32 x M = 8 51.4 -> 30.8.
MMA_PAIRS: MappingProxyType[str, frozenset] = MappingProxyType({"cuda": frozenset({"nf4", "fp4", "int4"})})


def mma_knobs(target: Target, fmt: Format, m: int, dtype: str, weight: tuple = ()) -> dict:
    """gemv_mma's render knobs for this row, M and x dtype on this kind of device ({}: its defaults);
    weight: (blocksize, scale_mode, K) of the weight, for the knobs that depend on it (pairs)."""
    least, knobs = MMA_KNOBS.get((device_kind(target), dtype), {}).get(fmt.name, (MAX_M + 1, {}))
    out = dict(knobs) if m >= least else {}
    if weight and fmt.name in MMA_PAIRS.get(device_kind(target), ()) and pair_table_fits(fmt, *weight):
        out.pop("tiles", None)  # two tiles' sums and the table would pass a block's 48 KB of local memory
        out["pairs"] = True
    return out


# device kind -> {format: the least M from which the mma path with f32 x rounds x to f16 once
# (round_to_f16, a second launch, then gemv_mma reading the f16 words with f16's knobs) rather than
# in every work-group of gemv_mma; y is the same bit for bit}. NVIDIA H100, run 123
# (docs/bench/scripts/roundbench.py, 4096 x 14336, public-call bindings, cold, in kernel -> rounded
# first): M = 2: nf4 26.6 -> 24.4 us, fp4 27.1 -> 24.4, int4 23.3 -> 21.9, int8 26.1 -> 26.1,
# blockwise8 40.9 -> 38.6; M = 8 (two tiles -> one): nf4 42.9 -> 28.1, fp4 43.0 -> 28.4, int4 38.7 ->
# 22.7, int8 37.4 -> 26.5, blockwise8 50.9 -> 43.5. M = 1: within 3% either way (nf4 24.0 -> 24.5,
# int4 22.4 -> 21.8): one launch stays. NVIDIA's OpenCL (H100, run 128, `qkgen bench -b opencl`, events
# around back-to-back launches, cold), where only nf4 takes the mma path with f32 x: plain / nested
# nf4 58.4 / 58.3 -> 43.0 / 43.2 us at M = 8, 43.0 / 43.9 -> 41.8 / 40.2 at M = 4, 37.9 / 38.7 ->
# 38.2 / 39.8 at M = 2 (slower): from M = 4.
MMA_ROUND_X: MappingProxyType[str, MappingProxyType] = MappingProxyType({
    "cuda": MappingProxyType({f: 2 for f in ("nf4", "fp4", "int4", "int8", "blockwise8")}),
    "opencl-nvidia": MappingProxyType({"nf4": 4}),
})  # fmt: skip


def default_round_x(target: Target, fmt: Format, m: int) -> bool:
    """Whether the mma path rounds f32 x to f16 in a launch of its own for this row and M here."""
    return m >= MMA_ROUND_X.get(device_kind(target), {}).get(fmt.name, MAX_M + 1)


def default_int8mma_layout(target: Target, fmt: Format) -> str:
    """The layout the int8mma path reads W in on this kind of device: "fragments" or "blocks"."""
    return "fragments" if fmt.name in INT8MMA_FRAGMENTS.get(device_kind(target), frozenset()) else "blocks"


def default_path(target: Target, fmt: Format, m: int, dtype: str, n: int = 0, k: int = 0) -> str:
    """"mma", "int8mma", "pairs" or "int8dot" where it was measured faster on this kind of device for
    M and (pairs) the weight's shape [n, k], else "float"."""
    table = FASTER_MMA_F32 if dtype == "f32" else FASTER_MMA
    kind = device_kind(target)
    if target.mma and m >= table.get(kind, {}).get(fmt.name, MAX_M + 1):
        return "mma"
    if target.mma and m >= FASTER_INT8MMA.get((kind, dtype == "f32"), {}).get(fmt.name, MAX_M + 1):
        return "int8mma"
    if faster_pairs(target, fmt, m, dtype, n, k):
        return "pairs"
    if not is_int8dot_weight(fmt):
        return "float"
    fast = FASTER_INT8DOT.get((kind, m > 1, dtype == "f32"), frozenset())
    return "int8dot" if fmt.name in fast else "float"
