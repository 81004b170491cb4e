"""The FP4 rows' quantizer facts (rule "sub_scale_table" of ops/quantize.py: MXFP4, NVFP4): the
count of midpoints below |x| that finds the reference's nearest level (magnitude_search), the code
bytes of a sub-block, x's own bits by dtype and the pair counts of 16-bit x."""

from __future__ import annotations

import functools

import numpy as np

from ...formats import Format
from ...formats.subscales import decode as decode_sub_scales
from .spec import Request

F32_FRACTION_BITS = 23
# sub_scale_table: a sub-block of x of at most this many words stays in registers between its absmax
# and its codes; a larger one is read again from local memory. H100 run 115 (kernel alone, 4096 x
# 14336, when x went through floats): nvfp4 (16 values) 89.3 / 117.3 us (f16 / f32 x) in registers against
# 96.6 / 126.4 read again; mxfp4 (32) 103.4 / 120.5 us in registers (94 registers) against 91.5 / 104.0.
X_REGS_WORDS = 16
# x's bits by dtype: value width, the bits of inf, and the helper rounding a float >= 0 toward zero
# to them (None: f32, its own bits)
_X_BITS = {"f32": (32, 0x7F800000, None), "f16": (16, 0x7C00, "qk_f16_bits_rz"), "bf16": (16, 0x7F80, "qk_bf16_bits_rz")}


def pair_counts(fmt: Format, req: Request, ctx: dict) -> dict | None:
    """sub_scale_table with 16-bit x where the target has that pair arithmetic: each word's two values
    at once, their counts of midpoints below |x| as sums of 1.0 in the pair's halves (an integer up to
    2^bits - 1, exact), read as bits after adding `magic` (the half whose ulp is 1); the code is the
    count, plus neg_code for a negative x whose count is not 0 (x's sign bit shifted onto bit `bits`).
    Needs two codes a byte from elements of even offsets at shifts 0 and 4 (a word's two values in
    two bytes side by side), neg_code = 2^bits above every count. None where it does not apply."""
    xt, m = ctx["xt"], magnitude_search(fmt)
    bits = len(m["mids"]).bit_length()
    cb = ctx["sub_codes"]
    if xt["width"] != 16 or not (req.target.fp16 if req.dtype == "f16" else req.target.bf16):
        return None
    if cb["per_byte"] != 2 or [sh for _, sh in cb["slots"]] != [0, 4] or any(o % 2 for o, _ in cb["slots"]):
        return None
    if m["neg_code"] != 1 << bits or bits + 1 > 4:
        return None
    both = lambda v: v | v << 16  # noqa: E731
    return dict(magic=both(0x6400 if req.dtype == "f16" else 0x4300), mask=both((1 << bits) - 1),
                sign_shift=15 - bits, sign=both(1 << bits))  # fmt: skip


def x_bits(dtype: str, sub: int) -> dict:
    """sub_scale_table: the kernel compares x's own bits (sign cleared) with the midpoints rounded to them."""
    width, inf, bits_rz = _X_BITS[dtype]
    return dict(width=width, inf=inf, bits_rz=bits_rz, words=sub * width // 32)


@functools.lru_cache(maxsize=None)
def magnitude_search(fmt: Format) -> dict:
    """The sub_scale_table rule's search, and the facts of the row it rests on (asserted here).

    The reference's code of x is the first q minimizing D_q = f32(|f32(table[q] s) - x|). The table is
    magnitudes M_0 = 0 < M_1 < ... < M_{h-1} (codes 0..h-1) then their negations (codes h..2h-1), each
    M_{k+1} <= 2 M_k from k = 1 on; every product M_k s and midpoint (M_k + M_{k+1}) / 2 * s is exact
    in float32 for every scale s the encoding stores with 2^23 s finite. Where s > 0, 2^23 s is finite
    and every |x| of the sub-block is below it, the code is k = the number of midpoints times s
    below |x| (ties go low), code k for x >= 0 or -0, and h + k for x < 0 except k = 0 (code 0):
      - signs: for x >= 0, a negative level's distance M_k s + x is at least code 0's (x), for x < 0
        a positive level's is at least |x|, code 0's; f32 rounding is monotone and code 0 comes
        first, so only the levels of x's sign (and code 0) can win, and for x < 0 the distance of
        code h + k is f32(|M_k s - |x||): the search is over magnitudes of a = |x|, in code order.
      - D_k is non-increasing while M_k s <= a and non-decreasing after (rounding is monotone), so
        its first minimum lies at the bracket M_lo s <= a < M_{lo+1} s or before it, in a run of
        equal values ending at lo.
      - in the bracket: for a at or below the exact midpoint, a - M_lo s <= M_{lo+1} s - a, so
        D_lo <= D_{lo+1} (rounding is monotone) and lo, the first, wins; above it both differences
        are exact (Sterbenz: a >= M_{lo+1} s / 2, and a < M_{lo+1} s <= 2 M_lo s; for lo = 0, a - 0),
        so D_{lo+1} < D_lo strictly. Comparing a with f32(midpoint s), exact, decides it.
      - no run: if f32(a - M_k s) = f32(a - M_lo s) for k < lo, the two exact values, at least s
        apart, round to one float f <= a, so s <= ulp(f) <= 2^-23 a (a normal: subnormal
        differences are exact): a >= 2^23 s, excluded.
    Elsewhere (s = 0, a saturated scale under values 2^23 times larger, 2^23 s not finite: a wrapped
    E8M0 byte, inf) the kernel walks down from the top magnitude while D_{k-1} <= D_k: by the second
    point that stops at the first minimum whatever the rounding (products may be inf there; a NaN
    distance walks on, to code 0, as the kernel always did). Returns the magnitudes (`mags`), the
    midpoints (`mids`), the code offset of the negative levels (`neg_code`) and the exponent of the
    bound (`lim_exp`)."""
    t = np.asarray(fmt.table, dtype=np.float64)
    h = len(t) // 2
    mags = t[:h]
    assert mags[0] == 0 and np.all(np.diff(mags) > 0) and np.array_equal(t[h:], -mags), fmt.name
    assert np.all(mags[2:] <= 2 * mags[1:-1]), fmt.name  # Sterbenz in every bracket
    mids = (mags[:-1] + mags[1:]) / 2
    scales = decode_sub_scales(fmt.sub_scales, np.arange(256, dtype=np.uint8))[0].astype(np.float64)
    scales = scales[scales * 2.0**F32_FRACTION_BITS <= np.finfo(np.float32).max]
    for values in (mags, mids):
        exact = scales[:, None] * values
        assert np.array_equal(exact.astype(np.float32).astype(np.float64), exact), fmt.name
    return dict(mags=tuple(float(m) for m in mags), mids=tuple(float(m) for m in mids), neg_code=h,
                lim_exp=F32_FRACTION_BITS)  # fmt: skip


def sub_block_codes(fmt: Format) -> dict:
    """The code bytes of a row with one plane, written a sub-block at a time: sub-block j's codes q fill
    bytes [j count, j count + count) of the plane's field, byte k holding q[k + off] at bit sh for each
    (off, sh) of its `slots` (from locate(), checked here); `elements`: byte k's elements, for a comment."""
    (plane,) = fmt.planes
    sub = fmt.sub_block or fmt.block
    count = sub * plane.bits // 8
    assert plane.shift == 0 and plane.bits == fmt.bits and sub * plane.bits % 8 == 0, fmt.name
    e = np.arange(fmt.block)
    byte, shift = plane.locate(e)
    rel = byte - e // sub * count  # the byte within its sub-block's run
    off = e % sub - rel
    slots = sorted({(int(o), int(sh)) for o, sh in zip(off, shift)})
    assert np.all((rel >= 0) & (rel < count)) and len({o for o, _ in slots}) == len(slots) == plane.per_byte, fmt.name
    return dict(field=plane.field, at=fmt.offsets[plane.field], count=count, per_byte=plane.per_byte, slots=slots,
                elements=", ".join(f"k + {o}" if o else "k" for o, _ in slots))  # fmt: skip


# float32 log2 of a = (2 - k 2^-23) 2^e rounds up to e + 1 for k <= floor(2^p ln 2), 2^(p - 24) half an
# ulp of e + 1 on a's side (the template's qk_floor_log2): the bound per p
LOG2_ROUND_UP = tuple(int(np.floor(2.0**p * np.log(2.0))) for p in range(8))
