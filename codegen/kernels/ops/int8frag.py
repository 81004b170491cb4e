"""gemv_int8frag: gemv_int8mma's product (x through q8_1, one int8 warp matrix product per weight
block for 16 rows of W and every activation row m < M <= 8), with W read from its "fragments"
layout: the weight repacked once, on the device, so that each lane loads the code words its
fragments take with one 16-byte load per row and group of blocks, and no stage in local memory.

gemv_int8mma copies every step's blocks to local memory first, because a lane's fragment words
sit 2 or 4 bytes apart in blocks of 18 to 34 bytes. Its copies, stage reads and their indexing
cost about 120 instructions per block and warp (Nsight Compute, run 49: 13.7 M instructions for
q4_0 at M = 8, 4096 x 14336), which bound it at 32-42% of the copy ceiling.

The fragments layout of a row with quad_words (lane q of a quad takes code words q + a for the
row's word offsets a, one or two per block) is, for N rows of nb blocks in groups of G = 4 / (words
a lane takes per block) blocks, padded with zero blocks to ng = ceil(nb / G) groups, these planes
one after another:
- codes: for row r, group j, lane q: the lane's words of blocks jG .. jG + G - 1, block after
  block (16 bytes at ((r ng + j) 4 + q) 16);
- the high-bit field where the row has one (q5_0, q5_1: 4 bytes a block), block order per row;
- d, and m where the row has one (2 bytes a block), block order per row.
Each plane starts 16-byte aligned, a row's group of d (or m) entries G * 2-byte aligned.
to_fragments is its numpy reference; repack_fragments (below) makes it on the device.
"""

from __future__ import annotations

import numpy as np

from ...errors import QKGenValueError
from ...formats import get
from ...formats.layout import plane_of
from ..source import Arg
from .int8dot import ACT, X_FRAG_PAD, int8dot_reference
from .int8mma import FRAG_WORDS, accepts, quad_words
from .spec import OpSpec, Output, Request, grid_1d, load_align


def frag_words(fmt) -> tuple[int, ...]:
    """The code word offsets a (lane q takes words q + a of each block's codes), ascending."""
    (lo, _), (hi, _) = quad_words(fmt)
    return tuple(sorted({lo, hi}))


def group_blocks(fmt) -> int:
    """G: the blocks of a group, whose words of one lane make 16 bytes."""
    return 4 // len(frag_words(fmt))


def frag_planes(fmt, n: int, nb: int) -> dict[str, int]:
    """Byte offset of each plane of the fragments layout of n rows of nb blocks, and "bytes": the total."""
    g = group_blocks(fmt)
    nbp = -(-nb // g) * g
    out, at = {}, 0
    sizes = [("codes", n * nbp // g * 64)]
    if fmt.high_bit_field:
        sizes.append((fmt.high_bit_field, n * nbp * 4))
    sizes += [("d", n * nbp * 2)] + ([("m", n * nbp * 2)] if fmt.scale == "d_m" else [])
    for name, size in sizes:
        out[name] = at
        at += -(-size // 16) * 16
    out["bytes"] = at
    return out


def _check_fields(fmt) -> None:
    hb = fmt.high_bit_field
    if not accepts(fmt) or hb and plane_of(fmt, hb).nbytes != 4 or plane_of(fmt, "d").nbytes != 2:
        raise QKGenValueError(f"format: {fmt.name} has no fragments layout; allowed: "
                              f"{', '.join(GEMV_INT8FRAG.formats())}")  # fmt: skip


def to_fragments(fmt, data: np.ndarray, n: int, k: int) -> np.ndarray:
    """The fragments layout (uint8) of the n x k weight whose blocks are `data` (row fmt)."""
    _check_fields(fmt)
    nb = k // fmt.block
    per = np.ascontiguousarray(data, np.uint8).reshape(n, nb, fmt.block_bytes)
    g = group_blocks(fmt)
    ng = -(-nb // g)
    blocks = np.zeros((n, ng * g, fmt.block_bytes), np.uint8)
    blocks[:, :nb] = per
    code_bytes = plane_of(fmt, "qs").nbytes
    qs = np.ascontiguousarray(blocks[:, :, fmt.offsets["qs"] : fmt.offsets["qs"] + code_bytes]).view("<u4")
    lanes = np.array([[q + a for a in frag_words(fmt)] for q in range(4)])  # [lane, word] -> code word
    codes = qs.reshape(n, ng, g, code_bytes // 4)[:, :, :, lanes]  # [row, group, block, lane, word]
    planes = frag_planes(fmt, n, nb)
    out = np.zeros(planes["bytes"], np.uint8)
    out[: n * ng * 64] = codes.transpose(0, 1, 3, 2, 4).reshape(-1).view(np.uint8)
    for name in [fmt.high_bit_field, "d", "m"]:
        if name in planes:
            raw = blocks[:, :, fmt.offsets[name] : fmt.offsets[name] + plane_of(fmt, name).nbytes].reshape(-1)
            out[planes[name] : planes[name] + raw.size] = raw
    return out


def _gemv_context(req: Request) -> dict:
    fmt, act = req.fmt, get(ACT)
    _check_fields(fmt)
    (lo, lo_shift), (hi, hi_shift) = quad_words(fmt)
    words = frag_words(fmt)
    assert (act.offsets["d"], act.offsets["s"]) == (0, 2), "x's ds plane: d in a word's low half, s in its high one"
    # warps of a work-group split a row's groups (warp w takes groups w, w + warps, ...) and add up
    # their sums in local memory, as gemv_int8mma's steps
    # Sweep 27 (run 51, H200, 4096 x 14336, M = 8, f32 x, kernel alone, cold): 16 warps a work-group
    # against 8: q4_0 29.6 -> 20.8 us, q5_0 31.4 -> 25.1, q8_0 36.5 -> 28.6 (4096 rows make 256
    # work-groups, so more warps is more loads in flight); 32 warps: 25.0, 29.2, 29.9. A turn of 4
    # blocks (unroll 2 for q8_0's groups of 2): q8_0 28.6 -> 26.4; 8 blocks: q4_0 20.8 -> 23.5.
    # Per row and device, runtime.paths.INT8FRAG_KNOBS picks other shapes where they were faster.
    wg = req.pop_wg(512, 32)
    warps = wg // 32
    unroll = req.pop_int("unroll", len(words), 1, 8)  # groups a warp loads at once: a turn of 4 blocks
    # the next turn's W loaded before this turn's products (registers for two turns of W)
    prefetch = req.pop_bool("prefetch", False)
    args = [Arg("frags", "in", "u8", bind="fragments"), Arg("xq", "in", "u8"), Arg("y", "out", req.dtype),
            Arg("N", "scalar", "u32"), Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32"),
            Arg("sums", "local", "f32", count=warps * 128)]  # fmt: skip
    if not req.target.mma:
        args.append(Arg("frag", "local", "u32", count=wg * FRAG_WORDS))
    return dict(
        args=args, wg=wg, warps=warps, unroll=unroll, prefetch=prefetch, act=act, words=words, group=group_blocks(fmt),
        lo=words.index(lo), lo_shift=lo_shift, hi=words.index(hi), hi_shift=hi_shift,
        byte_mask=int.from_bytes(bytes([fmt.mask]) * 4, "little"), frag_words=FRAG_WORDS, x_pad=X_FRAG_PAD,
    )  # fmt: skip


def _gemv_grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (-(-sizes["N"] // 16) * ks.wg,), (ks.wg,)


GEMV_INT8FRAG = OpSpec(
    name="gemv_int8frag", template="gemv_int8frag.jinja",
    doc="y = x @ W.T through q8_1 activations, int8 warp matrix products, W in its fragments layout",
    context=_gemv_context, grid=_gemv_grid, accepts=accepts, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    grid_role="reads_prior",
    reference=int8dot_reference, notes={"variants": False},
)  # fmt: skip


def _repack_context(req: Request) -> dict:
    """One work-item per block of the padded rows (a block past nb writes zeros): its code words to
    the lanes' places in the codes plane, its other fields to their planes."""
    fmt = req.fmt
    _check_fields(fmt)
    hb = fmt.high_bit_field
    fields = [(hb, 4)] if hb else []
    fields += [("d", 2)] + ([("m", 2)] if fmt.scale == "d_m" else [])
    args = [Arg("blocks", "in", "u8", bind="data"), Arg("frags", "out", "u8"), Arg("N", "scalar", "u32"),
            Arg("K", "scalar", "u32")]  # fmt: skip
    return dict(args=args, wg=req.pop_wg(64, 1), words=frag_words(fmt), group=group_blocks(fmt),
                code_align=load_align(fmt, "qs", 4),
                fields=[dict(name=n, nbytes=b, align=load_align(fmt, n, b)) for n, b in fields])  # fmt: skip


def _repack_grid(ks, sizes: dict):
    fmt = get(ks.format)
    g = group_blocks(fmt)
    return grid_1d(sizes["N"] * (-(-sizes["K"] // fmt.block // g) * g), ks.wg)


REPACK_FRAGMENTS = OpSpec(
    name="repack_fragments", template="repack_fragments.jinja",
    doc="inline blocks -> the int8mma fragments layout (ops/int8frag.py)",
    context=_repack_context, grid=_repack_grid, accepts=accepts, dtypes=("u8",),
    outputs=(Output("frags", "u8", lambda s: s["frags_bytes"]),),
    reference=lambda qt: to_fragments(qt.format, qt.data, qt.shape[0], qt.shape[1]), notes={"variants": False},
)  # fmt: skip
