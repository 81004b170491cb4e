"""gemv_int8mma_sub: the int8mma path for super-block rows (K-quants, MXFP4, NVFP4): x quantized to
q8_1 by quantize_q8_1, and each q8_1 block's 32 elements of 16 rows of W meet every activation row
m < M <= 8 in int8 warp matrix products, one a sub-block, scaled by that sub-block's scale.

gemv_int8dot spends M 4-way dot products per weight word and lane, so its time grows with M (M = 8
cost 1.8-2.7x M = 1 for these rows, H200 run 89); here one instruction serves 16 rows and all 8
activation columns. The numbers are the int8dot path's: the same integer sums per sub-block, the
same terms (int8dot_terms), added in another order.

A lane (g = lane / 4, q = lane % 4) takes rows g and g + 8 and activation row g at the chunk's
elements 4q..4q+3 and 16+4q..16+4q+3 (chunk words q and q + 4), the fragments of one [16 x 32] .
[32 x 8] product, loaded from global memory as they are. Chunk word k of a code plane is the 4
bytes at 4k of the chunk's run (one byte an element, at the run's slot: gemv_int8dot's
_plane_chunk, with a chunk of one q8_1 block). Table
codes (MXFP4, NVFP4) are looked up from the loaded word holding chunk word k, its low or high
nibbles. A sub-block of 16 elements is half the product: the other half's fragments are zeros.
Zero points (Q3_K's 4, Q6_K's 32) come off each code byte before the product, so the codes are
signed; mins of 32-element sub-blocks fold into the q8_1 sum s, those of 16 (Q2_K) into the
sub-block's own activation sum, one more product with W all ones.

Measured slower than gemv_int8dot at every M on an H200 (run 98, M = 8, kernel alone: 39-85 us
against 30-39), so no row takes it by default: a lane's fragment words are 4-byte loads of 8 rows
each, and each quad lane decodes its rows' sub-block scales again. Staging each step's blocks in
local memory first (as gemv_int8mma does) was slower still (run 99: q6_k 71.5 -> 180.8 us). A
layout made for it (W repacked once, as gemv_int8frag reads the block rows) is what it lacks.
"""

from __future__ import annotations

from ...formats import get
from ..cexpr import Sym, bare
from ..source import Arg
from .int8dot import ACT, _sub_block_context, int8dot_reference, is_sub_block_weight, reads_x_sum
from .int8mma import FRAG_WORDS
from .spec import OpSpec, Output, Request, load_align


def accepts(fmt) -> bool:
    """Super-block rows of the int8dot path whose sub-blocks are half or all of a q8_1 block."""
    return is_sub_block_weight(fmt) and fmt.sub_block in (16, 32)


def lut_words(fmt) -> list[tuple[Sym, Sym]]:
    """Table rows: for chunk words q4 and q4 + 4 (q4 the quad lane), (the byte in the chunk's run of
    the loaded word holding it, the nibble half it takes: 0 low, 1 high), from the plane's units of
    `unit` elements, `run` bytes each (byte i holds elements i and i + run). A constant where it is
    one for every lane."""
    p = fmt.planes[0]
    q = Sym.var("q4", 4)
    return [((k * 4 // p.unit) * p.run + (k * 4 % p.unit) % p.run, (k * 4 % p.unit) // p.run)
            for k in (q, q + 4)]  # fmt: skip


def _context(req: Request) -> dict:
    fmt, act, t = req.fmt, get(ACT), req.target
    assert (act.offsets["d"], act.offsets["s"], act.offsets["qs"]) == (0, 2, 4), "q8_1: d, s, then the codes"
    # the warps of a work-group take turns of `unroll` chunks of the 16 rows (warp w: turn t's chunks
    # (t warps + w) unroll + u) and add up their sums in local memory. 16 warps: sweep 44 (run 98,
    # H200, 4096 x 14336, M = 8, f16 x, kernel alone, cold), 8 -> 16 warps: q2_k 43.0 -> 39.3 us, q3_k
    # 79.0 -> 70.4, q6_k 71.5 -> 59.0, mxfp4 55.6 -> 41.3, nvfp4 59.0 -> 51.1, q4_k and q5_k equal
    # (68.6, 85.3); 4 warps 1.4-2x slower.
    wg = req.pop_wg(512, 32)
    unroll = req.pop_int("unroll", 2, 1, 8)
    warps = wg // 32
    ctx = _sub_block_context(fmt, act, act.block, False, False)
    args = [Arg("blocks", "in", "u8", bind="data"), Arg("xq", "in", "u8"), Arg("y", "out", req.dtype),
            Arg("N", "scalar", "u32"), Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32"),
            Arg("sums", "local", "f32", count=warps * 128)]  # fmt: skip
    if not t.mma:
        args.append(Arg("frag", "local", "u32", count=wg * FRAG_WORDS))
    # a lane's 4-byte loads of chunk words q and q + 4: a run's alignment, at most a word's (2-byte
    # aligned words as 16-bit pairs: a single word gains nothing from word_loads' shifted words)
    word_align = [min(p["align"], 4) for p in ctx["planes"]]
    lut = lut_words(fmt) if ctx["lut"] else []
    # one loaded word serves both chunk words; the nibble halves each takes, where fixed for every lane
    same = bool(lut) and lut[0][0].c() == lut[1][0].c()
    halves = tuple(h.const for _, h in lut) if lut and all(h.is_const() for _, h in lut) else None
    return dict(
        ctx, args=args, wg=wg, warps=warps, unroll=unroll, act=act, word_align=word_align,
        lut_at=[(bare(b.c()), bare(h.c())) for b, h in lut], lut_same=same, lut_halves=halves,
        lut_align=min(load_align(fmt, fmt.planes[0].field, 4), 4) if ctx["lut"] else 0,
        zero_bytes="0x%08xu" % (fmt.zero * 0x01010101) if fmt.zero else "", frag_words=FRAG_WORDS,
        use_sx=reads_x_sum(fmt, act), min_sums=fmt.has_min and fmt.sub_block < act.block,
    )  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (-(-sizes["N"] // 16) * ks.wg,), (ks.wg,)


SPEC = OpSpec(
    name="gemv_int8mma_sub", template="gemv_int8mma_sub.jinja",
    doc="y = x @ W.T for super-block rows through q8_1 activations, int8 warp matrix products",
    context=_context, grid=_grid, accepts=accepts, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    grid_role="reads_prior",
    reference=int8dot_reference, notes={"variants": False},
)  # fmt: skip
