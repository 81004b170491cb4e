"""Sub-block scales (a row's sub_scales, sub_block, scales_field): the reference decode and encode
of every encoding in row.SUB_SCALE_KINDS, in numpy. The kernel templates decode the same
encodings in C (templates/decode.jinja, `sub_scale`); this is what they are tested against.

Integer encodings (K-quants, ggml-common.h) give each sub-block j an integer scale sc_j (and min
mn_j) that multiplies the block's d (and dmin), rounded to float32 once, as ggml does:

    k4       8 sub-blocks, 12 bytes s[0..11]: j < 4: sc = s[j] & 63, mn = s[j+4] & 63; j >= 4:
             sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4, mn = (s[j+4] >> 4) | (s[j] >> 6) << 4
    k3       16 sub-blocks, 12 bytes: low 4 bits in s[j % 8] (high nibble for j >= 8), top 2 bits
             at bit 2*(j // 4) of s[8 + j % 4]; sc = that 6-bit number - 32
    nibbles  s[j]: sc = s[j] & 15, mn = s[j] >> 4
    i8       s[j] as a signed byte

Float encodings are the scale itself (FP4 rows; ggml's convention: the E2M1 table doubled, the
scale halved, so every product is exact in float32):

    e8m0_half   2^(e - 128); e < 2 are the subnormals 2^-128, 2^-127; e = 255 is 2^127, not NaN
    ue4m3_half  half the unsigned E4M3 value (bias 7, subnormals below exponent 1); 0 and 0x7F are 0
"""

from __future__ import annotations

import numpy as np

from ..errors import QKGenValueError
from . import codec
from .row import SUB_SCALES_TIMES_D, Format

_F32 = np.float32


def field(blocks: np.ndarray, fmt: Format, name: str) -> np.ndarray:
    """The bytes of inline field `name` of every block [nblocks, block_bytes]."""
    at = fmt.offsets[name]
    return blocks[:, at : at + fmt.member(name).nbytes]


def e8m0_half(e: np.ndarray) -> np.ndarray:
    """ggml_e8m0_to_fp32_half: 2^(e - 128) as float32 bits (e < 2: the subnormals)."""
    e = np.asarray(e).astype(np.uint32)
    return np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << np.uint32(23)).astype(np.uint32).view(_F32)


def ue4m3_half(x: np.ndarray) -> np.ndarray:
    """Half the unsigned E4M3 value of byte x (bias 7); 0 and 0x7F decode to 0, bit 7 is ignored
    otherwise (as ggml_ue4m3_to_fp32, halved)."""
    x = np.asarray(x).astype(np.int32)
    exp, man = (x >> 3) & 0xF, (x & 7).astype(_F32)
    raw = np.where(exp == 0, np.ldexp(man, -9), np.ldexp(_F32(1) + man / _F32(8), exp - 7)).astype(_F32)
    return np.where((x == 0) | (x == 0x7F), _F32(0), raw * _F32(0.5)).astype(_F32)


def ue4m3_code(x: np.ndarray) -> np.ndarray:
    """ggml_fp32_to_ue4m3: 0 unless x > 0; x clamped to 448; below the normal range trunc(x * 512 +
    0.5) capped at 7; else the mantissa's top 3 bits plus the next one (carry into the exponent),
    an exponent of 15 or more giving 0x7E."""
    x = np.asarray(x, dtype=_F32)
    pos, x = x > 0, np.minimum(x, _F32(448))
    bits = x.view(np.uint32).astype(np.int64)
    e0, man = ((bits >> 23) & 0xFF) - 120, ((bits >> 20) & 7) + ((bits >> 19) & 1)
    e, man = np.where(man > 7, e0 + 1, e0), np.where(man > 7, 0, man)
    with np.errstate(invalid="ignore"):
        sub = np.minimum(np.trunc(x * _F32(512) + _F32(0.5)), 7)
    sub = np.where(sub < 1, 0, sub).astype(np.int64)
    normal = np.where(e >= 15, 0x7E, (e << 3) | man)
    return np.where(pos, np.where(e0 <= 0, sub, normal), 0).astype(np.uint8)


# the range of the integers each integer encoding stores (scale and min alike): decode's output
INTEGER_RANGE = {"k4": (0, 63), "k3": (-32, 31), "nibbles": (0, 15), "i8": (-128, 127)}


def decode(kind: str, s: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(scale, min or None) per sub-block [nblocks, nsub] from the field bytes [nblocks, k]:
    integers for the integer encodings, float32 scales for the float ones."""
    if kind == "e8m0_half":
        return e8m0_half(s), None
    if kind == "ue4m3_half":
        return ue4m3_half(s), None
    s = s.astype(np.int32)
    if kind == "nibbles":
        return s & 0xF, s >> 4
    if kind == "i8":
        return np.where(s >= 128, s - 256, s), None
    if kind == "k4":
        lo, mid, hi = s[:, 0:4], s[:, 4:8], s[:, 8:12]
        return (np.concatenate([lo & 63, (hi & 0xF) | ((lo >> 6) << 4)], axis=1),
                np.concatenate([mid & 63, (hi >> 4) | ((mid >> 6) << 4)], axis=1))  # fmt: skip
    if kind == "k3":
        j = np.arange(16)
        low = np.where(j < 8, s[:, j % 8] & 0xF, s[:, j % 8] >> 4)
        high = (s[:, 8 + j % 4] >> (2 * (j // 4))) & 3
        return (low | (high << 4)) - 32, None
    raise QKGenValueError(f"sub_scales: {kind!r}")


def encode(kind: str, sc: np.ndarray, mn: np.ndarray | None) -> np.ndarray:
    """The inverse of decode for the integer encodings (sc, mn already in their stored ranges)."""
    sc = sc.astype(np.int32)
    if kind == "nibbles":
        return ((sc | (mn << 4)) & 0xFF).astype(np.uint8)
    if kind == "i8":
        return (sc & 0xFF).astype(np.uint8)
    if kind == "k4":
        out = np.concatenate([sc[:, :4] | ((sc[:, 4:] >> 4) << 6), mn[:, :4] | ((mn[:, 4:] >> 4) << 6),
                              (sc[:, 4:] & 0xF) | ((mn[:, 4:] & 0xF) << 4)], axis=1)  # fmt: skip
        return out.astype(np.uint8)
    if kind == "k3":
        u = sc + 32
        out = np.zeros((len(u), 12), dtype=np.int32)
        out[:, :8] = (u[:, :8] & 0xF) | ((u[:, 8:] & 0xF) << 4)
        for j in range(16):
            out[:, 8 + j % 4] |= (u[:, j] >> 4) << (2 * (j // 4))
        return out.astype(np.uint8)
    raise QKGenValueError(f"sub_scales: {kind!r}")


def block_scales(fmt: Format, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(scale, min or None) per sub-block [nblocks, sub_count], float32, as ggml computes them:
    f32(d * sc_j) and f32(dmin * mn_j) for the integer encodings, the decoded scale for the float
    ones, d alone for rows without sub-block scales."""
    if fmt.sub_scales is None:
        return codec.read_float(blocks, fmt, "d")[:, None], None
    sc, mn = decode(fmt.sub_scales, field(blocks, fmt, fmt.scales_field))
    if fmt.sub_scales not in SUB_SCALES_TIMES_D:
        return sc, None
    d = codec.read_float(blocks, fmt, "d")[:, None]
    mins = None if mn is None else codec.read_float(blocks, fmt, "dmin")[:, None] * mn.astype(_F32)
    return d * sc.astype(_F32), mins


def element_scales(fmt: Format, data: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(scale per element, additive min per element or None), flat float32: value = q * scale + min,
    the min the negated f32(dmin * mn_j) (negation is exact: f32(a) - b == f32(a) + (-b))."""
    scale, mins = block_scales(fmt, np.asarray(data).reshape(-1, fmt.block_bytes))
    per = fmt.sub_block or fmt.block
    scale = np.repeat(scale, per, axis=1).reshape(-1)[:n]
    return scale, None if mins is None else -np.repeat(mins, per, axis=1).reshape(-1)[:n]
