"""The device quantizer's render knobs where others than its ops' defaults were measured faster, per
kind of device (runtime.paths.device_kind) and row: runtime.quantize takes them."""

from __future__ import annotations

from types import MappingProxyType

from ..formats import Format
from ..kernels.target import Target
from .paths import device_kind

# backend -> {format: the device quantizer's render knobs where others than the op's defaults were
# measured faster}. The K-quant searches with `lanes` work-items a block (one a sub-block, q2_k's
# 16: two each): NVIDIA H200, 2026-11-27, run 87
# (docs/bench/scripts/quantsweep.py qsweep_kquant_lanes.json, x 4096 x 14336, kernel alone, codes
# equal to the public call's), f16 x, lanes 1 -> these: q2_k 1239 -> 974 us, q3_k 971 -> 506, q4_k
# 1739 -> 1339, q5_k 1621 -> 1124, q6_k 1312 -> 815 (f32 x alike). Still 3-12% of the copy ceiling:
# the reference's trial loops, not memory, take the time.
QUANTIZE_KNOBS: MappingProxyType[str, MappingProxyType] = MappingProxyType({
    "cuda": MappingProxyType({f: MappingProxyType({"lanes": n})
                              for f, n in (("q2_k", 8), ("q3_k", 16), ("q4_k", 8), ("q5_k", 8), ("q6_k", 16))}),
})  # fmt: skip


def quantize_knobs(target: Target, fmt: Format) -> dict:
    """The device quantizer's render knobs for this row on this kind of device (QUANTIZE_KNOBS; {}: the op's defaults)."""
    return dict(QUANTIZE_KNOBS.get(device_kind(target), {}).get(fmt.name, {}))


# (device kind, x dtype) -> {format: quantize_blockwise's render knobs where others than the op's
# defaults were measured faster}. 32 elements a work-item against 16: NVIDIA H200, 2026-12-02, runs
# 188 and 190 (docs/bench/scripts/quantsweep.py qsweep_s37b.json, qsweep_s37c.json, x 4096 x 14336,
# blocksize 64, kernel alone, bytes equal to the public call's): nf4 f16 50.4 -> 48.3 us (70.5% ->
# 73.6% of copy), nf4 bf16 50.8 -> 48.3, fp4 f16 60.7 -> 58.7, fp4 bf16 61.5 -> 59.7 (fp4 with its
# bucket search). Slower with f32 x (nf4 70.5 -> 89.6) and for blockwise8 f16 (bs 256, 111.4 -> 121.0).
# fp4 with its 256 buckets a unit takes the op's default, 16 with 4 tiles: run 215 (qsweep_s42b.json)
# f16 53.9 us, 32 elements 55.0 (54.1 with 2 tiles); run 216 (qsweep_s42c.json) 54.5 / 54.5.
# blockwise8 (bs 256) with a register budget of 8 work-groups a compute unit (32 registers against
# 40, no spills): run 218 (qsweep_s42e.json) f16 58.7 -> 57.7 us (70.9% -> 72.1%), bf16 59.9 -> 58.8
# (69.5% -> 70.8%), one run; slower with f32 x (82.9 -> 84.9), no faster for fp4 / nf4.
_PER_LANE_32 = MappingProxyType({"per_lane": 32})
_MIN_GROUPS_8 = MappingProxyType({"min_groups": 8})
BLOCKWISE_KNOBS: MappingProxyType[tuple[str, str], MappingProxyType] = MappingProxyType({
    ("cuda", dtype): MappingProxyType({"nf4": _PER_LANE_32, "blockwise8": _MIN_GROUPS_8})
    for dtype in ("f16", "bf16")
})  # fmt: skip


# Threads an SM holds at once, by arch (CUDA's compute capability table): a register budget of N
# work-groups of 256 applies where N of them fit (elsewhere nvcc ignores it, with a warning).
THREADS_PER_SM = MappingProxyType({"sm_80": 2048, "sm_86": 1536, "sm_89": 1536, "sm_90": 2048, "sm_100": 2048,
                                   "sm_120": 1536})  # fmt: skip


def blockwise_knobs(target: Target, fmt: Format, dtype: str, blocksize: int) -> dict:
    """quantize_blockwise's render knobs for this row, x dtype and blocksize on this kind of device
    (BLOCKWISE_KNOBS; {}: the op's defaults, also where per_lane does not divide the blocksize);
    min_groups only where that many work-groups of 256 fit an SM of the target's arch."""
    knobs = dict(BLOCKWISE_KNOBS.get((device_kind(target), dtype), {}).get(fmt.name, {}))
    if 256 * knobs.get("min_groups", 0) > THREADS_PER_SM.get(target.arch, 0):
        knobs.pop("min_groups")
    return knobs if blocksize % knobs.get("per_lane", 1) == 0 else {}
