"""gemv_mma: y = x @ W.T with W decoded to x's 16-bit type (f16 or bf16; f16 for f32 x, which is
rounded to f16 on load) in registers and multiplied by warp matrix instructions (products added in
f32).

A warp takes 16 rows of W at a time and every activation row m < M <= 8 as the 8 columns of one
[16 x 16] . [16 x 8] product, so each weight is decoded once for all M rows and the products cost a
few instructions per warp instead of M multiply-adds per weight and lane. Where the target has no
warp matrix instruction (t.mma) the template forms the same product through local memory: correct,
for checking the fragment bookkeeping on any device, but slow.

What it computes: each weight is its dequantized f32 value rounded to the product type (as a matmul
on an f16 or bf16 copy of W would take it), times x in that type, summed in f32.
"""

from __future__ import annotations

import numpy as np

from ...errors import QKGenValueError
from ...formats import codec, family_of, locate
from ...formats import reference as ref
from ..cexpr import Sym
from ..source import Arg
from ..dialects.base import half_bits
from .dequantize import chunk_code_at, code_load_align
from .gemv import PAIR_COPIES, two_codes_a_byte
from .spec import LOCAL_BYTES, OpSpec, Output, Request, default_word_loads, one_scale_per_block, table_locals, weight_args

CHUNK = 32  # elements a lane decodes at a time: 4 of them go into each of the step's 8 products
FRAG_WORDS = 6  # a lane's fragment words per product: 4 of W (16-bit pairs), 2 of x
TURN = 4 * CHUNK  # columns of a row a warp takes in a turn: its 4 quad lanes' chunks


def accepts(fmt) -> bool:
    """Rows with one scale per block (the float GEMV's decode) whose 32-element chunks are whole
    32-bit words of codes and, for inline rows, whole blocks."""
    return one_scale_per_block(fmt) and (CHUNK * fmt.bits) % 32 == 0 and (not fmt.inline or fmt.block == CHUNK)


def product_type(dtype: str) -> str:
    """The 16-bit type the products take for x of dtype: x's own, f16 for f32 x (rounded on load)."""
    return dtype if dtype in ("f16", "bf16") else "f16"


def round_16(a: np.ndarray, ptype: str) -> np.ndarray:
    """a's values rounded to the product type (f16 or bf16), as float64."""
    a = np.asarray(a, dtype=np.float32)
    return (ref.bf16_to_f32(ref.round_to(a, "bf16")) if ptype == "bf16" else a.astype(np.float16)).astype(np.float64)


def mma_reference(qt, x: np.ndarray, dtype: str = "f16") -> np.ndarray:
    """The float64 product of x [M, K] and the dequantized weight, both rounded to the product type
    (x's f16/bf16; f16 for f32 x)."""
    ptype = product_type(dtype)
    return round_16(x, ptype) @ round_16(ref.dequantize(qt), ptype).T


def f16_pairs(fmt) -> list[tuple[int, int, int, int]]:
    """The two-at-a-time decode (inline rows whose value is an f16 d times a code less a fixed bias,
    codes of a width dividing 16): (word, bit, e, e') for each pair of chunk elements e, e' whose
    codes sit at bits b and b + 16 of code word `word`, in order. Empty where the row is not one."""
    eligible = (fmt.inline and fmt.scale == "d" and fmt.member("d").ctype == "f16" and fmt.offsets["d"] == 0
                and fmt.sub_scales is None and fmt.code in ("signed", "unsigned") and fmt.step == 1
                and 16 % fmt.low_bits == 0 and fmt.high_unit is None and fmt.bits <= 8)  # fmt: skip
    if not eligible:
        return []
    at = {}
    for e in range(CHUNK):
        byte, shift = (int(v) for v in locate(fmt, e))
        at[(byte // 4, 8 * (byte % 4) + shift)] = e
    pairs = [(word, bit, e, at[(word, bit + 16)]) for (word, bit), e in sorted(at.items()) if bit < 16]
    assert len(pairs) == CHUNK // 2, fmt.name
    return pairs


def _pair_terms(fmt) -> dict:
    """The template values of f16_pairs: the two-code mask, the sign flip of signed codes (q ^ 2^(bits-1)
    is q + 2^(bits-1) in offset form) and the bias as an f16 pair of 1024 + bias."""
    half = 2 ** (fmt.bits - 1)
    bias = half if fmt.code == "signed" else fmt.zero
    flip = half * 0x10001 if fmt.code == "signed" else 0
    return dict(mask2=fmt.mask * 0x10001, flip2=flip, bias=bias, bias2=half_bits(1024 + bias) * 0x10001)


def _context(req: Request) -> dict:
    fmt = req.fmt
    limit = family_of(fmt).chunk_limit(fmt, req.blocksize, req.scale_mode)
    if limit % CHUNK:
        raise QKGenValueError(f"blocksize: {limit}; gemv_mma decodes {CHUNK}-element chunks under one scale; "
                              f"allowed: a multiple of {CHUNK}")  # fmt: skip
    chunk_bytes = CHUNK // fmt.per_byte
    align = code_load_align(fmt, chunk_bytes)
    # tiles: 16-row tiles per warp (each activation fragment serves them all); wg: warps of 32 lanes
    # that split K between them (warp w takes steps w, w + warps, ...) and add up in local memory.
    # Sweep 9 (H200, 4096 x 14336, f16 x, kernel alone, cold; docs/bench/2026-11-25-h200-mma.md): one
    # tile and 16 warps were fastest or within 2% at M = 8 for nf4 nested (26.8 us; 8 warps 28.9,
    # 4 warps 44.1, 2 tiles 31.7), int4 row, q4_1 and q8_0; more tiles cost registers and warps.
    tiles = req.pop_int("tiles", 1, 1, 4)
    word_loads = req.pop_bool("word_loads", default_word_loads(req.target))
    wg = req.pop_wg(512, 32)
    warps = wg // 32
    # rounds: blocks of 16 * tiles rows a work-group takes one after another, so that its tables (the
    # pair table: 32 KB) are filled once for them all where rows are many and short
    rounds = req.pop_int("rounds", 1, 1, 64)
    # x_rounded (f32 x only): x comes as the f16 words round_to_f16 made of it, so the kernel loads
    # half the bytes and rounds nothing; y is still f32 and bit for bit the one-kernel form's.
    x_rounded = req.pop_bool("x_rounded", False)
    if x_rounded and req.dtype != "f32":
        raise QKGenValueError(f"x_rounded: True with dtype {req.dtype}; allowed: True only with dtype f32 "
                              "(16-bit x is loaded as it is)")  # fmt: skip
    x_arg = Arg("x", "in", "u32", ctype="uchar", bind="xh") if x_rounded else Arg("x", "in", "x")
    tables, local_arrays = table_locals(req)
    local_arrays.append(Arg("sums", "local", "f32", count=warps * tiles * 128))
    if not req.target.mma:
        local_arrays.append(Arg("frag", "local", "u32", count=wg * FRAG_WORDS))
    args = weight_args(req) + [x_arg, Arg("y", "out", req.dtype), Arg("N", "scalar", "u32"),
                               Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32")]  # fmt: skip
    if req.scale_mode == "group":
        args.append(Arg("groups_per_row", "scalar", "u32"))
    i = Sym.var("i", CHUNK)
    code_at = locate(fmt, i) if fmt.inline else chunk_code_at(req, CHUNK)
    # pairs: two codes a step in f16 pair arithmetic where the row allows (f16_pairs), else one at a time
    # in f32. H200, 4096 x 14336, public calls, cold (runs 24 and 25, docs/bench/2026-11-25-h200-mma.md):
    # q4_0 25.5 -> 19.3 us at M = 1, 28.0 -> 25.9 at M = 8; q8_0 33.0 -> 31.7 and 40.6 -> 38.1; q5_0,
    # whose fifth bits are merged per pair, 34.0 -> 37.3 at M = 8: off by default where a row has them.
    ptype = product_type(req.dtype)
    # For rows of two codes a byte with statistics arrays (nf4, fp4, int4), pairs means the byte-pair
    # table instead (table_pairs below).
    two = two_codes_a_byte(fmt)
    want = req.pop_bool("pairs", False if two else not fmt.high_bit_field)
    pairs = f16_pairs(fmt) if want and ptype == "f16" else []
    terms = _table_pairs(req, limit, tiles, warps, tables, local_arrays) if want and two else _pair_terms(fmt) if pairs else {}
    return dict(x_f32=req.dtype == "f32" and not x_rounded, x_rounded=x_rounded,
                grid_role="reads_prior" if x_rounded else "",
                ept=CHUNK, chunk_bytes=chunk_bytes, code_align=align, code_at=code_at, word_loads=word_loads,
                ptype=ptype, pairs=pairs, table_pairs=want and two, **terms, tables=tables, args=args + local_arrays,
                tiles=tiles, warps=warps, rows=16 * tiles, frag_words=FRAG_WORDS, wg=wg,
                **({"rounds": rounds} if rounds > 1 else {}))  # fmt: skip


def _span(limit: int) -> int:
    """The columns of a piece under one scale: a block or group (limit, a power of two) or a turn."""
    assert limit & (limit - 1) == 0, limit  # blocksizes and group sizes are powers of two
    return min(limit, TURN)


def _k_multiple(fmt, span: int) -> int:
    """What K must be a multiple of for the byte-pair table: where blocks run across rows (absmax
    statistics) no piece may straddle two, so K is whole pieces; otherwise whole chunks."""
    return max(CHUNK, span) if fmt.scale == "absmax" else CHUNK


def pair_table_fits(fmt, blocksize: int, scale_mode: str | None, k: int) -> bool:
    """Whether gemv_mma's byte-pair table (pairs on a row of two codes a byte) takes weights of
    this row, blocksize and scale mode with rows of k elements."""
    if not two_codes_a_byte(fmt):
        return False
    return k % _k_multiple(fmt, _span(family_of(fmt).chunk_limit(fmt, blocksize, scale_mode))) == 0


def _table_pairs(req: Request, limit: int, tiles: int, warps: int, tables: dict, local_arrays: list) -> dict:
    """The byte-pair table's template values (pairs on a row of two codes a byte). Each code byte
    looks its two values up as one pair of the product type in a 256-entry table (a copy a lane, as
    the float GEMV's pairs: no two lanes meet in a bank), unscaled: a warp's turn is cut into pieces
    of `span` columns under one scale, each quad lane taking `per` columns of every piece, so the
    products of a piece take its two rows' scales once, in f32, after the warp's matrix products.
    Each weight is then its code value rounded to the product type (exact for integer codes), not
    its scaled value; x and the sums as before. Where the blocks run across rows (absmax
    statistics), K must be a multiple of span so that no piece straddles two blocks."""
    span = _span(limit)
    tables.setdefault("TABLE", codec.raw_code_values(req.fmt))
    local_arrays[:] = [Arg("pairs", "local", "u32", count=256 * PAIR_COPIES)] + [a for a in local_arrays if a.name != "lut"]
    # staged: scales that change along a row (blocks, groups) are found once a step by one lane of the
    # warp each, into two slots of warp-private local memory, not by the 4 quad lanes that read them
    staged = req.fmt.scale == "absmax" or req.scale_mode == "group"
    scales = 16 * tiles * (TURN // span)
    if staged:
        local_arrays.append(Arg("ws", "local", "f32", count=warps * 2 * scales))
    used = 4 * sum(a.count for a in local_arrays)  # the sums among them
    if req.target.mma and used > LOCAL_BYTES:  # NVIDIA's static local memory a block
        raise QKGenValueError(f"tiles: {tiles} with wg {32 * warps} and pairs: True needs {used} bytes of local memory; "
                              f"allowed: at most {LOCAL_BYTES} (fewer tiles or warps)")  # fmt: skip
    return dict(span=span, pieces=TURN // span, per=span // 4, copies=PAIR_COPIES, staged=staged, scales=scales,
                pair_shift=(PAIR_COPIES * 4).bit_length() - 1, pair_mask=255 * PAIR_COPIES * 4,
                k_multiple=_k_multiple(req.fmt, span))  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (-(-sizes["N"] // (16 * ks.param("tiles") * ks.param("rounds", 1))) * ks.wg,), (ks.wg,)


SPEC = OpSpec(
    name="gemv_mma", template="gemv_mma.jinja", doc="y = x @ W.T, W decoded to x's f16/bf16, warp matrix products",
    context=_context, grid=_grid, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    accepts=accepts, dtypes=("f16", "bf16", "f32"), reference=mma_reference,
    extra_variants=({}, {"dtype": "f32", "x_rounded": True}),  # f32 x as it comes, or rounded by round_to_f16
)  # fmt: skip
