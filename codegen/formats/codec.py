"""Reference codec pieces shared by every family: numeric rules and code packing.

Everything here follows the row: where a code's bits sit comes from the row's planes and
`locate()` (pack, unit, msb_first, low_bits; the high-bit field with high_bits and high_unit); what
it means from code / table / step / zero. The families (bnb4, bnb8, gguf, plain_int) choose statistics; this module does the rest.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..errors import FormatError, QKGenValueError
from .row import FIELD_TYPES, Format, Plane

_F32 = np.float32


def host_array(a: Any) -> np.ndarray:
    """A host numpy view of a numpy array or a (CPU) torch tensor, without copying."""
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def mean_f32(a: np.ndarray, axis: int | None = None, count: Any = None) -> np.ndarray:
    """float32 mean: summed in float64, divided in float64, rounded once to float32.

    Why float64: the sum of float32 values in float32 depends on summation order (torch, numpy and
    GPU reductions all differ); in float64 it is exact or nearly so, and one rounding follows.
    `count` (array or int) overrides the element count, e.g. to ignore zero padding.
    """
    a = np.asarray(a, dtype=np.float64)
    total = a.sum(axis=axis)
    if count is None:
        count = a.size if axis is None else a.shape[axis]
    return (total / np.asarray(count, dtype=np.float64)).astype(_F32)


# ---- the exact mean: float32 values as integers, so no summation order can change it ----

EXACT_BINS = 16  # bin k holds the values whose exponent s has s >> 4 == k (16 exponents a bin)
_CHUNK = 1 << 28  # values per np.bincount pass: |sum of significands| < 2^28 * 2^24, exact in float64


def f32_bins(a: Any) -> tuple[tuple[int, ...], int]:
    """(bins, non-finite count) of float32 values, as the exact_sum kernel makes them.

    A finite float32 is m * 2^s units of 2^-149 exactly: m its 24-bit significand (with the
    implicit bit where the exponent field E > 0), s = max(E, 1) - 1 in 0..253. Bin k is the sum of
    +-(m << (s & 15)) over the values with s >> 4 == k, a Python int, so that sum_k bins[k] << 16k
    is their exact sum in units of 2^-149. Non-finite values (E = 255) are left out and counted.
    """
    u = np.ascontiguousarray(a, dtype=_F32).reshape(-1).view(np.uint32)
    total = [0] * 254  # the signed significand sum of each exponent s
    nonfinite = 0
    for at in range(0, u.size, _CHUNK):
        c = u[at : at + _CHUNK]
        e = (c >> 23) & 0xFF
        finite = e != 0xFF
        nonfinite += int(c.size - np.count_nonzero(finite))
        m = (c & 0x7FFFFF) | ((e > 0).astype(np.uint32) << 23)  # the implicit bit of normal values
        signed = np.where(c >> 31, -m.astype(np.float64), m.astype(np.float64))  # integers below 2^24
        s = np.maximum(e, 1) - 1
        # float64 sums of integers stay exact while below 2^53 (at most _CHUNK terms of 2^24)
        per_s = np.bincount(s[finite], weights=signed[finite], minlength=254)
        total = [t + int(w) for t, w in zip(total, per_s)]
    bins = [0] * EXACT_BINS
    for s, t in enumerate(total):
        bins[s >> 4] += t << (s & 15)
    return tuple(bins), nonfinite


def mean_from_bins(bins: Any, count: int) -> np.float32:
    """The float32 nearest (ties to even) to the mean of `count` values whose bins (f32_bins, or
    the exact_sum kernel's, summed over its work-groups) are `bins`: sum_k bins[k] << 16k units of
    2^-149, divided by count. Beyond the largest float32 it is inf (a mean of finite float32 values
    never is)."""
    if len(bins) != EXACT_BINS:
        raise QKGenValueError(f"bins: {len(bins)} values; allowed: {EXACT_BINS} integers")
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise QKGenValueError(f"count: {count!r}; allowed: an int >= 1 (the mean of no values is undefined)")
    total = sum(int(b) << (16 * k) for k, b in enumerate(bins))
    return nearest_f32(total, int(count))


def nearest_f32(num: int, den: int) -> np.float32:
    """The float32 nearest to num / den * 2^-149 (den > 0), ties to even, by integer arithmetic:
    one rounding, never through float64 (which would round twice)."""
    a = abs(num)
    if a == 0:
        return _F32(0)  # an exact zero: +0
    # the least e >= 0 with floor(a / (den << e)) < 2^24: then the quotient q is the 24-bit
    # significand of a normal result (q >= 2^23 whenever e > 0), or at e = 0 a subnormal's
    e = max(0, a.bit_length() - den.bit_length() - 24)  # where > 0, a / (den << e) > 2^23 already
    while a >> e >= den << 24:
        e += 1
    q, r = divmod(a, den << e)
    if 2 * r > den << e or (2 * r == den << e and q & 1):
        q += 1
    # float32 bits of q * 2^(e - 149): exponent field e + 1 over the significand q - 2^23, which is
    # (e << 23) + q; a carry to q = 2^24 moves into the exponent, a subnormal's (e = 0) into E = 1
    bits = min((e << 23) + q, 0x7F800000)  # past the largest float32: inf
    return np.array(bits | (0x80000000 if num < 0 else 0), dtype=np.uint32).view(_F32)[()]


def exact_mean_f32(a: Any, name: str = "a") -> np.float32:
    """The float32 nearest (ties to even) to the exact arithmetic mean of finite float32 values,
    independent of summation order: exact integer sums (f32_bins), one correct rounding
    (mean_from_bins). The exact_sum kernel gives the same bins on any device. An exact zero mean is
    +0. Empty input and non-finite values are refused (QKGenValueError naming `name`)."""
    x = np.asarray(a, dtype=_F32).reshape(-1)
    if x.size == 0:
        raise QKGenValueError(f"{name}: no values; allowed: at least one (the mean of none is undefined)")
    bins, nonfinite = f32_bins(x)
    if nonfinite:
        at = int(np.flatnonzero(~np.isfinite(x))[0])
        raise QKGenValueError(f"{name}: {x[at]} at index {at} is not finite; allowed: finite values")
    return mean_from_bins(bins, x.size)


def fma_f32(a: float, b: np.ndarray, c: float) -> np.ndarray:
    """f32(a*b + c) with one rounding: a, b, c are float32 values whose exact result fits float64."""
    return (np.float64(a) * b.astype(np.float64) + np.float64(c)).astype(_F32)


def roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero. In float64 so that v + 0.5 is exact for float32 v."""
    v = v.astype(np.float64)
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


def f16_bytes(v: np.ndarray) -> np.ndarray:
    """Values as little-endian f16 bytes [..., 2] (numpy's float32 -> float16 rounds to nearest even)."""
    with np.errstate(over="ignore"):  # beyond 65504 is inf, as in ggml
        half = np.asarray(v, dtype=_F32).astype("<f2")
    return np.ascontiguousarray(half).view(np.uint8).reshape(*np.shape(v), 2)


def round_to(x: Any, dtype: Any) -> np.ndarray:
    """Round float32 values to f16 or bf16, to nearest even: the oracle for f16/bf16 kernel outputs.

    dtype "f16"/"float16"/np.float16 -> a numpy float16 array (overflow -> inf, subnormals kept).
    dtype "bf16"/"bfloat16" -> a uint16 array of bf16 bit patterns (numpy has no bf16; use
    bf16_to_f32 to read them). NaN stays NaN (quieted, sign kept); inf stays inf; values beyond the
    largest bf16 round to inf as round-to-nearest-even demands.
    """
    x = np.asarray(x, dtype=_F32)
    name = getattr(dtype, "__name__", str(dtype)).lower().replace("torch.", "")
    if name in ("f16", "float16", "half"):
        with np.errstate(over="ignore"):  # overflow to inf is the correct rounding
            return x.astype(np.float16)
    if name in ("bf16", "bfloat16"):
        bits = x.view(np.uint32).astype(np.uint64)
        nan = (bits & 0x7FFFFFFF) > 0x7F800000
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        quiet = (bits >> 16) | 0x0040
        return np.where(nan, quiet, rounded).astype(np.uint16)
    raise QKGenValueError(f"dtype: {dtype!r} is not supported; allowed: f16, bf16")


def bf16_to_f32(bits: Any) -> np.ndarray:
    """bf16 bit patterns (uint16) -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(_F32)



# --------------------------------------------------------------------------------------------
# code layout, generic over rows
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _slot_matrix(plane: Plane, count: int) -> tuple[np.ndarray, np.ndarray]:
    """For `count` consecutive codes of one plane (whole packing units): (elem[byte, slot],
    shift[slot]), elem[b, s] the element whose bits sit in byte b, slot s (from locate())."""
    e = np.arange(count)
    byte, shift = plane.locate(e)
    slot = shift // plane.bits
    slot = (plane.per_byte - 1 - slot) if plane.msb_first else slot
    elem = np.empty((count // plane.per_byte, plane.per_byte), dtype=np.intp)
    elem[byte, slot] = e
    shifts = np.empty(plane.per_byte, dtype=np.uint8)
    shifts[slot] = shift
    return elem, shifts


def _pack_plane(codes: np.ndarray, plane: Plane, count: int) -> np.ndarray:
    """The plane's bits of codes [..., count] -> packed bytes [..., count // per_byte]."""
    elem, shift = _slot_matrix(plane, count)
    part = ((codes >> plane.shift) & plane.mask).astype(np.uint8)
    return np.bitwise_or.reduce(part[..., elem] << shift, axis=-1).astype(np.uint8)


def _unpack_plane(packed: np.ndarray, plane: Plane, count: int) -> np.ndarray:
    """Packed bytes [..., count // per_byte] -> the plane's bits of codes [..., count] (in place), int32."""
    elem, shift = _slot_matrix(plane, count)
    out = np.empty(packed.shape[:-1] + (count,), dtype=np.int32)
    out[..., elem] = (packed[..., :, None] >> shift) & plane.mask
    return out << plane.shift


def _flat_unit(fmt: Format) -> int:
    """Codes per repeating packing unit of a format with separate statistics."""
    if fmt.pack != "interleaved":  # split packing is defined per block; separate statistics have none
        raise FormatError(f"format {fmt.name!r}: field 'pack': separate statistics need interleaved codes")
    return fmt.per_byte


def pack_codes(codes: Any, fmt: Format, n: int, fill: int = 0) -> np.ndarray:
    """Pack n raw codes the way `fmt` stores them; returns the flat u8 `data` array.

    Codes are integers as unpack_codes returns them (table index, unsigned field, or two's
    complement value; only the low `bits` bits are used). Formats with separate statistics get
    ceil(n * low_bits / 8) bytes, the padding slots of the last byte holding `fill`. Inline (GGUF)
    formats get nblocks * block_bytes bytes with every code plane (fmt.planes: the low bits, the
    high bits) filled and every statistics field zero (the quantizer writes those).
    """
    codes = np.asarray(codes).reshape(-1)[:n].astype(np.int64)
    if not fmt.inline:
        unit = _flat_unit(fmt)
        padded = np.full(-(-n // unit) * unit, fill, dtype=np.int64)
        padded[:n] = codes
        low = fmt.planes[0]
        return _pack_plane(padded.reshape(-1, unit), low, unit).reshape(-1)[: -(-n * fmt.low_bits // 8)]
    if n % fmt.block:
        raise QKGenValueError(f"n: {n} is not a multiple of {fmt.name}'s block {fmt.block}")
    blocks = codes.reshape(-1, fmt.block)
    data = np.zeros((blocks.shape[0], fmt.block_bytes), dtype=np.uint8)
    for plane in fmt.planes:
        at = fmt.offsets[plane.field]
        data[:, at : at + fmt.block * plane.bits // 8] = _pack_plane(blocks, plane, fmt.block)
    return data.reshape(-1)


def _sign_extend(codes: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return np.where(codes >= half, codes - (1 << bits), codes)


def unpack_codes(fmt: Format, data: np.ndarray, n: int) -> np.ndarray:
    """Raw codes of the first n elements, flat int32, before table / step / zero / scale.

    table codes: the table index; unsigned codes: the stored field (q5: with the fifth bit from the
    high-bit field merged in; q6_k: its two high bits); signed codes: the two's-complement value.
    """
    data = data.reshape(-1)
    if fmt.inline:
        blocks = data.reshape(-1, fmt.block_bytes)
        codes = np.zeros((blocks.shape[0], fmt.block), dtype=np.int32)
        for plane in fmt.planes:
            at = fmt.offsets[plane.field]
            codes |= _unpack_plane(blocks[:, at : at + fmt.block * plane.bits // 8], plane, fmt.block)
    else:
        unit = _flat_unit(fmt)
        codes = _unpack_plane(data.reshape(-1, unit // fmt.per_byte), fmt.planes[0], unit)
    codes = codes.reshape(-1)[:n]
    if fmt.code == "signed":
        codes = _sign_extend(codes, fmt.bits)
    return codes.astype(np.int32)


def code_values(fmt: Format, codes: Any) -> np.ndarray:
    """What codes mean before scaling, as float32: table[q] or the integer q*step - zero."""
    codes = np.asarray(codes)
    if fmt.code == "table":
        return np.asarray(fmt.table, dtype=_F32)[codes]
    return (codes.astype(np.int64) * fmt.step - fmt.zero).astype(_F32)


def raw_code_values(fmt: Format) -> tuple[float, ...]:
    """What each raw code 0 .. 2^bits - 1 (as stored, before sign extension) means before scaling."""
    raw = np.arange(1 << fmt.bits)
    return tuple(float(v) for v in code_values(fmt, _sign_extend(raw, fmt.bits) if fmt.code == "signed" else raw))


def read_float(blocks: np.ndarray, fmt: Format, name: str) -> np.ndarray:
    """Float field `name` (f16 or f32, one value) of every inline block [nblocks, block_bytes], as float32."""
    f = fmt.member(name)
    at, np_type = fmt.offsets[name], FIELD_TYPES[f.ctype][1]
    return np.ascontiguousarray(blocks[:, at : at + f.nbytes]).view(np_type).reshape(-1).astype(_F32)


def inverse(d: np.ndarray) -> np.ndarray:
    """1/d in float32, 0 where d is 0 (ggml's rule) or NaN (a block holding a NaN: its codes are 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((d == 0) | np.isnan(d), _F32(0), _F32(1) / d).astype(_F32)
