"""gemv_int8mma: the int8dot path's product (x quantized to q8_1 by quantize_q8_1, integer products
of codes, scaled per block) on warp matrix instructions: one [16 x 32] . [32 x 8] int8 product per
weight block for 16 rows of W and every activation row m < M <= 8.

The int8dot kernel spends M 4-way dot products per weight word and lane, so its time grows with
M; here a block of 16 rows meets all 8 activation columns in one instruction, and each weight word
is loaded and lined up once for all of them. The numbers are the int8dot path's: the same integer
sums, the same per-block terms (int8dot_terms), added in another order. Where the target has no
warp matrix instruction (t.mma) the template forms the same product through local memory: correct,
for checking the fragment bookkeeping on any device, but slow.

Rows qualify as for gemv_int8dot's block rows (is_block_weight), when a lane's two activation words
of a block (elements 4q..4q+3 and 16+4q..16+4q+3 for quad lane q) each come from one code word at
the same distance from q for every q (quad_words): true of split 4-bit runs of 16 and of bytes.
"""

from __future__ import annotations

import math

from ...errors import QKGenValueError
from ...formats import get
from ..source import Arg
from .int8dot import ACT, act_words, int8dot_reference, is_block_weight
from .spec import LOCAL_BYTES, OpSpec, Output, Request

FRAG_WORDS = 6  # a lane's fragment words per product: 4 of W, 2 of x


def quad_words(fmt) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """((a, shift), (a', shift')): quad lane q's activation words q and q + 4 of a block are the
    code word q + a moved down `shift` bits, and word q + a' moved down shift' (masked to the code
    bits). None where the row's words do not line up so."""
    aw = act_words(fmt, get(ACT))
    if len(aw) != 8:
        return None
    lo = {(w - k, s) for k, (w, s) in enumerate(aw[:4])}
    hi = {(w - k, s) for k, (w, s) in enumerate(aw[4:])}
    return (lo.pop(), hi.pop()) if len(lo) == len(hi) == 1 else None


def accepts(fmt) -> bool:
    return is_block_weight(fmt) and quad_words(fmt) is not None


def _context(req: Request) -> dict:
    fmt, act = req.fmt, get(ACT)
    (lo, lo_shift), (hi, hi_shift) = quad_words(fmt)
    # warps of a work-group split a row's blocks (warp w takes steps w, w + warps, ...) and add up
    # their sums in local memory; a step is `unroll` blocks of the 16 rows and of every activation row
    wg = req.pop_wg(256, 32)
    unroll = req.pop_int("unroll", 2, 1, 16)
    warps = wg // 32
    # Each step's blocks are first copied to the warp's own local memory (its "stage") in units of the
    # block alignment (4 or 2 bytes), row after row, so a warp's load takes one or two rows' consecutive
    # bytes, where the fragments' own loads would take 8 rows' (sweep 20, run 39, H200: 31 us at M = 1
    # for q4_0 reading fragments from global memory, against 11 for gemv_int8dot). Words from the
    # boundary at or below a 2-byte aligned row were slower (run 42: q4_0 at M = 8 25.3 -> 40.6 us).
    unit = 4 if fmt.block_align % 4 == 0 else 2
    row_bytes = unroll * fmt.block_bytes  # a W row's bytes of a step
    x_words = act.block_bytes // 4
    # bank_pad: stage rows padded to 4 (mod 8) words, so that the 8 quads of a warp reading 4
    # consecutive words of 8 rows hit 32 different banks (4 g (2k + 1) + q4 mod 32 for g, q4 < 8, 4).
    # Sweep 24 (run 46, H200, M = 8, f32 x, kernel alone, cold): q4_0 25.3 -> 24.2 us, q4_1 23.9 ->
    # 23.6, q5_0 37.8 -> 37.0, q8_0 62.2 -> 61.1, q5_1 24.7 -> 24.8.
    bank_pad = req.pop_bool("bank_pad", True)
    pad = (lambda w: w + (4 - w) % 8) if bank_pad else (lambda w: w)  # noqa: E731
    row_stride = 4 * pad(-(-row_bytes // 4))  # a W row's bytes in the stage
    x_stride = pad(unroll * x_words) if bank_pad else unroll * x_words + 1  # words an activation row
    w_stride = max(16 * row_stride // 4, 128)  # a warp's stage words; at the end its 128 sums
    args = [Arg("blocks", "in", "u8", bind="data"), Arg("xq", "in", "u8"), Arg("y", "out", req.dtype),
            Arg("N", "scalar", "u32"), Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32"),
            Arg("wstage", "local", "u32", count=warps * w_stride),
            Arg("xstage", "local", "u32", count=warps * 8 * x_stride)]  # fmt: skip
    if not req.target.mma:
        args.append(Arg("frag", "local", "u32", count=wg * FRAG_WORDS))
    need = sum(a.nbytes() for a in args if a.kind == "local")
    if need > LOCAL_BYTES:
        raise QKGenValueError(f"unroll: {unroll}; with wg {wg} the stages of {fmt.name} need {need} bytes of local "
                              f"memory; allowed: at most {LOCAL_BYTES} (a smaller unroll or wg)")  # fmt: skip
    hb = fmt.high_bit_field
    # the alignment of a field's words in the stage (row starts, block starts, the field's offset)
    stage_align = lambda off: math.gcd(row_stride, fmt.block_bytes, off, 4)  # noqa: E731
    return dict(
        args=args, wg=wg, warps=warps, unroll=unroll, act=act, words=sorted({lo, hi}), lo_word=lo, lo_shift=lo_shift,
        hi_word=hi, hi_shift=hi_shift, unit=unit, row_bytes=row_bytes, row_units=row_bytes // unit,
        row_stride=row_stride, w_stride=w_stride, w_loads=-(-16 * row_bytes // unit // 32),
        x_stride=x_stride, x_words=x_words, x_loads=-(-8 * unroll * x_words // 32),
        qs_align=stage_align(fmt.offsets["qs"]), qh_align=stage_align(fmt.offsets[hb]) if hb else 0,
        byte_mask=int.from_bytes(bytes([fmt.mask]) * 4, "little"), frag_words=FRAG_WORDS,
    )  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (-(-sizes["N"] // 16) * ks.wg,), (ks.wg,)


SPEC = OpSpec(
    name="gemv_int8mma", template="gemv_int8mma.jinja",
    doc="y = x @ W.T through q8_1 activations, int8 warp matrix products",
    context=_context, grid=_grid, accepts=accepts, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    grid_role="reads_prior",
    reference=int8dot_reference, notes={"variants": False},
)  # fmt: skip
