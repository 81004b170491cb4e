"""Reference codecs in numpy: the oracle every generated kernel is tested against.

Everything here is derived from the format row (codegen.formats): where a code sits comes from
pack / msb_first / low_bits / high_bit_field / fields / offsets, what it means from code / table /
step / zero, and how it is scaled from scale. Only the choice of statistics when *quantizing*
differs by family, and that part is kept small (one function per family, driven by the row).

Dequantization is what a kernel must compute, in float32, operation by operation:

    table codes:  table[q] * s                      one f32 multiply
    int codes:    f32(q*step - zero) * s            the integer is exact in f32, one f32 multiply
    scale d_m:    f32(q * d) + m                    two roundings, no fused multiply-add

where s is absmax[block] (bnb), d read as f16 (GGUF) or scale[tensor|row|group] (plain ints). Nested
bnb statistics are absmax[b] = f32(f32(code2[absmax_q[b]] * absmax2[b // 256]) + offset).

Quantization facts that carry over (reimplemented here, not copied):

* bitsandbytes 4-bit (bnb 0.50 CPU = its torch path): absmax = max|x| per block. Full blocks scale
  by x * f32(1 / max(absmax, 1e-38)); the partial last block divides, x / max(absmax, 1e-38), and
  stores that clamped absmax (an all-zero partial block stores 1e-38). The scaled value, clamped to
  [-1, 1], takes the code of the nearest table entry by f32 midpoints of the sorted table; a value
  on a midpoint goes to the lower entry. FP4 sorts +0 (code 0) before -0 (code 8), so 0 and tiny
  negatives get code 0 and tiny positives (0, 0.0026] get code 8 (-0.0). An odd tail is padded with
  the code of 0.0.
* bitsandbytes 8-bit blockwise (bnb 0.50 CPU native): absmax = max|x|; an all-zero block gets
  code 0. Otherwise c = clamp(x * f32(1/absmax), -1, 1) is looked up in a 65536-entry table over
  [-1, 1]: i = trunc(fma(65535, f32(1 + c) * 0.5, 0.5)), entry i = the first code whose f32
  midpoint (code[j] + code[j+1]) * 0.5 is >= f32(2i / 65535) - 1. This is nearest-code up to
  ~1.5e-5 near midpoints, not exact nearest.
* nested bnb statistics: offset = mean(absmax), absmax - offset quantized 8-bit blockwise
  (block 256, the nested table). bnb takes torch's float32 mean, whose summation order depends on
  the CPU's vector width; here the mean is float64-summed and rounded once (see mean_f32), which
  equals torch's whenever the float32 sum is exact.
* GGUF (ggml's quantize_row_*_ref): zero-point codes d = x[argmax |x|] / -zero,
  q = min(2^bits - 1, trunc(x * (1/d) + (zero + 0.5))); d_m codes d = (max - min) / (2^bits - 1),
  m = min, q = min(2^bits - 1, trunc((x - min) * (1/d) + 0.5)); signed codes d = amax / 127,
  q = roundf(x * (1/d)) (half away from zero); 1/d is 0 where d is 0. d and m are stored as f16
  (round to nearest even). A row with an f16 field "s" (q8_1) stores s = f16(f32(sum q) * d), d the
  float32 d before its f16 rounding.
* plain ints (qkgen's own rule): scale = amax / max(|qmin|, qmax) per tensor / row / group
  (f32 division), codes = clip(round_half_even(x / scale), qmin, qmax) (f32 division); a group
  whose scale is 0 stores the code of value 0. Note that for the two's-complement rows this lets
  +amax clip from |qmin| to qmax, one step. Two-level codes {-1, +1} (int1) use the sign instead:
  scale = mean |x|, code +1 where x >= 0 else -1.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import formats as F
from .errors import QKGenValueError
from .qtensor import QTensor, validate

_F32 = np.float32
# bitsandbytes clamps absmax to this before dividing (torch path), as a float32 (a subnormal).
_BNB_TINY = _F32(1e-38)
# bitsandbytes' CPU 8-bit quantizer: lookup-table resolution over [-1, 1].
_BNB8_LUT_STEPS = 65535


# --------------------------------------------------------------------------------------------
# small numeric helpers
# --------------------------------------------------------------------------------------------


def _np(a: Any) -> np.ndarray:
    """A host numpy view of a numpy array or a (CPU) torch tensor, without copying."""
    if hasattr(a, "detach"):
        return a.detach().cpu().numpy()
    return np.asarray(a)


def _as_format(fmt: F.Format | str) -> F.Format:
    return fmt if isinstance(fmt, F.Format) else F.get(fmt)


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


def _fma_f32(a: float, b: np.ndarray, c: float) -> np.ndarray:
    """f32(a*b + c) with one rounding: a, b, c are float32 values whose exact result fits float64."""
    return (np.float64(a) * b.astype(np.float64) + np.float64(c)).astype(_F32)


def _roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero. In float64 so that v + 0.5 is exact for float32 v."""
    v = v.astype(np.float64)
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


def _f16_bytes(v: np.ndarray) -> np.ndarray:
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
def _slot_matrix(fmt: F.Format, count: int) -> tuple[np.ndarray, np.ndarray]:
    """For `count` consecutive codes packed as fmt packs one block: (elem[byte, slot], shift[slot]).

    elem[b, s] is the element whose code sits in byte b, slot s; shift[s] is that slot's bit offset.
    """
    p, lb = fmt.per_byte, fmt.low_bits
    e = np.arange(count)
    if fmt.pack == "interleaved":
        byte, slot = e // p, e % p
    else:  # split: the first count/p codes fill slot 0 of every byte, the next ones slot 1, ...
        nbytes = count // p
        byte, slot = e % nbytes, e // nbytes
    elem = np.empty((count // p, p), dtype=np.intp)
    elem[byte, slot] = e
    slots = np.arange(p)
    shift = ((p - 1 - slots) if fmt.msb_first else slots) * lb
    return elem, shift.astype(np.uint8)


def _pack_low(codes: np.ndarray, fmt: F.Format, count: int) -> np.ndarray:
    """Low bits of codes [..., count] -> packed bytes [..., count // per_byte]."""
    elem, shift = _slot_matrix(fmt, count)
    low = (codes & fmt.mask).astype(np.uint8)
    return np.bitwise_or.reduce(low[..., elem] << shift, axis=-1).astype(np.uint8)


def _unpack_low(packed: np.ndarray, fmt: F.Format, count: int) -> np.ndarray:
    """Packed bytes [..., count // per_byte] -> low bits of codes [..., count], as int32."""
    elem, shift = _slot_matrix(fmt, count)
    out = np.empty(packed.shape[:-1] + (count,), dtype=np.int32)
    fields = (packed[..., :, None] >> shift) & fmt.mask
    out[..., elem] = fields
    return out


def _flat_unit(fmt: F.Format) -> int:
    """Codes per repeating packing unit of a format with separate statistics."""
    if fmt.pack != "interleaved":  # no such row today; split packing would need the block size
        raise F.FormatError(f"format {fmt.name!r}: field 'pack': separate statistics need interleaved codes")
    return fmt.per_byte


def pack_codes(codes: Any, fmt: F.Format | str, n: int, fill: int = 0) -> np.ndarray:
    """Pack n raw codes the way `fmt` stores them; returns the flat u8 `data` array.

    Codes are integers as unpack_codes returns them (table index, unsigned field, or two's
    complement value; only the low `bits` bits are used). Formats with separate statistics get
    ceil(n * low_bits / 8) bytes, the padding slots of the last byte holding `fill`. Inline (GGUF)
    formats get nblocks * block_bytes bytes with the codes field and the high-bit field filled and
    every statistics field zero (the quantizer writes those).
    """
    fmt = _as_format(fmt)
    codes = np.asarray(codes).reshape(-1)[:n].astype(np.int64)
    if not fmt.inline:
        unit = _flat_unit(fmt)
        padded = np.full(-(-n // unit) * unit, fill, dtype=np.int64)
        padded[:n] = codes
        return _pack_low(padded.reshape(-1, unit), fmt, unit).reshape(-1)[: -(-n * fmt.low_bits // 8)]
    if n % fmt.block:
        raise QKGenValueError(f"n: {n} is not a multiple of {fmt.name}'s block {fmt.block}")
    blocks = codes.reshape(-1, fmt.block)
    data = np.zeros((blocks.shape[0], fmt.block_bytes), dtype=np.uint8)
    at = fmt.offsets[fmt.codes_field]
    data[:, at : at + fmt.code_bytes(fmt.block)] = _pack_low(blocks, fmt, fmt.block)
    if fmt.high_bit_field:
        # bit e of the little-endian u32 field is element e's bit `low_bits`
        high = ((blocks >> fmt.low_bits) & 1).astype(np.uint8)
        at = fmt.offsets[fmt.high_bit_field]
        data[:, at : at + fmt.block // 8] = np.packbits(high, axis=-1, bitorder="little")
    return data.reshape(-1)


def _sign_extend(codes: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return np.where(codes >= half, codes - (1 << bits), codes)


def unpack_codes(qt: QTensor) -> np.ndarray:
    """Raw codes per element, int32 array of qt.shape, before table / step / zero / scale.

    table codes: the table index; unsigned codes: the stored field (q5: with the fifth bit from the
    high-bit field merged in); signed codes: the two's-complement value.
    """
    fmt = qt.format
    data = _np(qt.data).reshape(-1)
    if fmt.inline:
        blocks = data.reshape(-1, fmt.block_bytes)
        at = fmt.offsets[fmt.codes_field]
        codes = _unpack_low(blocks[:, at : at + fmt.code_bytes(fmt.block)], fmt, fmt.block)
        if fmt.high_bit_field:
            at = fmt.offsets[fmt.high_bit_field]
            high = np.unpackbits(blocks[:, at : at + fmt.block // 8], axis=-1, bitorder="little")
            codes |= high.astype(np.int32) << fmt.low_bits
    else:
        unit = _flat_unit(fmt)
        codes = _unpack_low(data.reshape(-1, unit // fmt.per_byte), fmt, unit)
    codes = codes.reshape(-1)[: qt.n]
    if fmt.code == "signed":
        codes = _sign_extend(codes, fmt.bits)
    return codes.reshape(qt.shape).astype(np.int32)


def code_values(fmt: F.Format | str, codes: Any) -> np.ndarray:
    """What codes mean before scaling, as float32: table[q] or the integer q*step - zero."""
    fmt = _as_format(fmt)
    codes = np.asarray(codes)
    if fmt.code == "table":
        return np.asarray(fmt.table, dtype=_F32)[codes]
    return (codes.astype(np.int64) * fmt.step - fmt.zero).astype(_F32)


def _read_f16(blocks: np.ndarray, fmt: F.Format, name: str) -> np.ndarray:
    at = fmt.offsets[name]
    return np.ascontiguousarray(blocks[:, at : at + 2]).view("<f2").reshape(-1).astype(_F32)


# --------------------------------------------------------------------------------------------
# dequantize
# --------------------------------------------------------------------------------------------


def bnb_absmax(qt: QTensor) -> np.ndarray:
    """Per-block float32 absmax of a bnb tensor; nested: f32(f32(code2[q] * absmax2[b//256]) + offset)."""
    if not qt.nested:
        return _np(qt.absmax).reshape(-1).astype(_F32, copy=False)
    fmt = qt.format
    q = _np(qt.absmax_q).reshape(-1)
    absmax2 = _np(qt.absmax2).reshape(-1).astype(_F32, copy=False)
    code2 = np.asarray(fmt.nested_table, dtype=_F32)
    scaled = code2[q] * absmax2[np.arange(q.size) // fmt.nested_block]  # f32 multiply, rounded
    return scaled + _F32(qt.offset)  # then a separate f32 add


def _element_scales(qt: QTensor) -> tuple[np.ndarray, np.ndarray | None]:
    """(scale per element, additive m per element or None), flat float32."""
    fmt = qt.format
    if fmt.inline:
        blocks = _np(qt.data).reshape(-1, fmt.block_bytes)
        d = np.repeat(_read_f16(blocks, fmt, "d"), fmt.block)
        m = np.repeat(_read_f16(blocks, fmt, "m"), fmt.block) if fmt.scale == "d_m" else None
        return d, m
    if fmt.scale == "absmax":
        return np.repeat(bnb_absmax(qt), qt.blocksize)[: qt.n], None
    scale = _np(qt.scale).astype(_F32, copy=False)
    if qt.scale_mode == "tensor":
        return np.full(qt.n, scale.reshape(-1)[0], dtype=_F32), None
    per_row = scale.reshape(qt.rows, -1)
    cols = np.arange(qt.cols) // qt.blocksize if qt.scale_mode == "group" else np.zeros(qt.cols, np.intp)
    return per_row[:, cols].reshape(-1), None


def dequantize(qt: QTensor) -> np.ndarray:
    """float32 values of qt, shape qt.shape, computed exactly as the kernels must (module docstring)."""
    validate(qt)
    values = code_values(qt.format, unpack_codes(qt).reshape(-1))
    scale, m = _element_scales(qt)
    with np.errstate(over="ignore", invalid="ignore"):  # IEEE results (inf, NaN) are the reference too
        out = values * scale  # one f32 multiply
        if m is not None:
            out = out + m  # rounded separately: kernels must not fuse this into an fma
    return out.reshape(qt.shape)


# --------------------------------------------------------------------------------------------
# quantize: bitsandbytes
# --------------------------------------------------------------------------------------------


def _blocks_of(flat: np.ndarray, block: int) -> tuple[np.ndarray, int]:
    """Zero-padded [nblocks, block] view of flat and the element count of the last block."""
    n = flat.size
    nblocks = -(-n // block)
    padded = np.zeros(nblocks * block, dtype=_F32)
    padded[:n] = flat
    return padded.reshape(nblocks, block), n - (nblocks - 1) * block


def _nearest_sorted(scaled: np.ndarray, table: tuple[float, ...]) -> np.ndarray:
    """Index of the nearest table entry by f32 midpoints of the sorted table; midpoints go low.

    The sort is stable, so equal entries (FP4's +0 and -0) keep table order.
    """
    t = np.asarray(table, dtype=_F32)
    order = np.argsort(t, kind="stable")
    mids = (t[order[:-1]] + t[order[1:]]) / _F32(2)
    return order[np.searchsorted(mids, scaled, side="left")]


def _bnb4_codes(flat: np.ndarray, table: tuple[float, ...], block: int) -> tuple[np.ndarray, np.ndarray]:
    """bitsandbytes 4-bit blockwise (its torch path): (codes [n], absmax [nblocks])."""
    blocks, last = _blocks_of(flat, block)
    absmax = np.abs(blocks).max(axis=1)
    safe = np.maximum(absmax, _BNB_TINY)
    scaled = blocks * (_F32(1) / safe)[:, None]  # full blocks: multiply by the reciprocal
    if last != block:  # the partial block divides, and keeps its clamped absmax
        scaled[-1] = blocks[-1] / safe[-1]
        absmax[-1] = safe[-1]
    scaled = np.clip(scaled, -1, 1).reshape(-1)[: flat.size]
    return _nearest_sorted(scaled, table), absmax


@functools.lru_cache(maxsize=None)
def _bnb8_lut(table: tuple[float, ...]) -> np.ndarray:
    """bitsandbytes' CPU lookup table: grid point i of [-1, 1] -> first code whose midpoint >= it."""
    t = np.asarray(table, dtype=_F32)
    if np.any(np.diff(t) < 0):
        raise F.FormatError("table: the 8-bit lookup quantizer needs a sorted table")
    mids = (t[:-1] + t[1:]) * _F32(0.5)
    i = np.arange(_BNB8_LUT_STEPS + 1)
    grid = (_F32(2) * i.astype(_F32)) / _F32(_BNB8_LUT_STEPS) - _F32(1)
    return np.searchsorted(mids, grid.astype(_F32), side="left").astype(np.int32)


def _bnb8_codes(flat: np.ndarray, table: tuple[float, ...], block: int) -> tuple[np.ndarray, np.ndarray]:
    """bitsandbytes 8-bit blockwise (its native CPU path): (codes [n], absmax [nblocks])."""
    blocks, _ = _blocks_of(flat, block)
    absmax = np.abs(blocks).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = _F32(1) / absmax
        c = np.clip(blocks * inv[:, None], -1, 1)
    half = (_F32(1) + c) * _F32(0.5)
    index = np.trunc(_fma_f32(_BNB8_LUT_STEPS, np.nan_to_num(half), 0.5)).astype(np.int64)
    codes = _bnb8_lut(table)[index]
    codes[absmax == 0] = 0  # an all-zero block writes code 0 (its value is -0.99 * 0 = -0)
    return codes.reshape(-1)[: flat.size], absmax


_BNB_CODERS = {"bnb4": _bnb4_codes, "bnb8": _bnb8_codes}


def nest_absmax(
    absmax: Any, fmt: F.Format | str, offset: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """bnb nested statistics: (absmax_q u8, absmax2 f32, offset) for a bnb4 row.

    offset defaults to mean_f32(absmax); pass bitsandbytes' own offset to reproduce its bytes
    exactly (its torch float32 mean sums in a CPU-dependent order). absmax - offset is then
    quantized 8-bit blockwise with the nested table and block, by bnb's 8-bit rule.
    """
    fmt = _as_format(fmt)
    if not fmt.nestable:
        raise QKGenValueError(f"nested: {fmt.name} has no nested statistics; allowed: "
                              f"{', '.join(f.name for f in F.ROWS if f.nestable)}")  # fmt: skip
    absmax = np.asarray(absmax, dtype=_F32).reshape(-1)
    off = mean_f32(absmax) if offset is None else _F32(offset)
    codes, absmax2 = _bnb8_codes(absmax - off, fmt.nested_table, fmt.nested_block)
    return codes.astype(np.uint8), absmax2.astype(_F32), float(off)


def _quantize_bnb(x: np.ndarray, fmt: F.Format, blocksize: int, nested: bool) -> QTensor:
    flat = x.reshape(-1)
    codes, absmax = _BNB_CODERS[fmt.family](flat, fmt.table, blocksize)
    # bnb pads an odd 4-bit tail with the code of 0.0
    fill = int(_nearest_sorted(np.zeros(1, _F32), fmt.table)[0]) if fmt.family == "bnb4" else 0
    data = pack_codes(codes, fmt, flat.size, fill=fill)
    stats: dict[str, Any] = {"absmax": absmax.astype(_F32)}
    if nested:
        absmax_q, absmax2, offset = nest_absmax(absmax, fmt)
        stats = {"absmax_q": absmax_q, "absmax2": absmax2, "offset": offset}
    return QTensor(format=fmt, shape=x.shape, data=data, blocksize=blocksize, **stats)


# --------------------------------------------------------------------------------------------
# quantize: GGUF
# --------------------------------------------------------------------------------------------


def _inverse(d: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(d == 0, _F32(0), _F32(1) / d).astype(_F32)


def _gguf_codes(blocks: np.ndarray, fmt: F.Format) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """ggml's per-type choice of statistics: (codes [nb, block], d f32 [nb], m f32 [nb] or None)."""
    top = (1 << fmt.bits) - 1
    if fmt.scale == "d_m":  # asymmetric: min maps to code 0, max to the top code
        lo, hi = blocks.min(axis=1), blocks.max(axis=1)
        d = (hi - lo) / _F32(top)
        v = (blocks - lo[:, None]) * _inverse(d)[:, None] + _F32(0.5)
        return np.minimum(top, np.trunc(v)).astype(np.int64), d, lo
    if fmt.code == "unsigned":  # zero point: the largest-magnitude value maps to code 0
        pick = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=1)[:, None], axis=1)[:, 0]
        d = pick / _F32(-fmt.zero)
        v = blocks * _inverse(d)[:, None] + _F32(fmt.zero + 0.5)
        return np.minimum(top, np.trunc(v)).astype(np.int64), d, None
    d = np.abs(blocks).max(axis=1) / _F32(fmt.qmax)  # signed: symmetric, roundf
    return _roundf(blocks * _inverse(d)[:, None]).astype(np.int64), d, None


def _quantize_gguf(x: np.ndarray, fmt: F.Format) -> QTensor:
    if x.size % fmt.block:
        raise QKGenValueError(f"x: {x.size} elements; {fmt.name} needs a multiple of {fmt.block}")
    blocks = x.reshape(-1, fmt.block)
    codes, d, m = _gguf_codes(blocks, fmt)
    data = pack_codes(codes, fmt, x.size).reshape(-1, fmt.block_bytes)
    fields = {"d": d, "m": m}
    if fmt.has_field("s"):  # q8_1: s = d * sum(q), the int sum times the f32 d, stored as f16
        fields["s"] = codes.sum(axis=1).astype(_F32) * d
    for name, value in fields.items():
        if value is not None:
            at = fmt.offsets[name]
            data[:, at : at + 2] = _f16_bytes(value)
    return QTensor(format=fmt, shape=x.shape, data=data.reshape(-1), blocksize=fmt.block)


# --------------------------------------------------------------------------------------------
# quantize: plain integers
# --------------------------------------------------------------------------------------------


def _is_sign_code(fmt: F.Format) -> bool:
    """Two levels {-1, +1} (int1): no zero to round to, so the sign decides."""
    return fmt.qmin == -fmt.qmax and fmt.qmax - fmt.qmin == fmt.step


def _int_groups(x: np.ndarray, mode: str, group: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """x as [ngroups, glen] zero-padded, each group's true length, and the scale array's shape."""
    cols = x.shape[-1]
    rows = x.size // cols
    if mode == "tensor":
        return x.reshape(1, -1), np.array([x.size]), (1,)
    if mode == "row":
        return x.reshape(rows, cols), np.full(rows, cols), (rows,)
    ng = -(-cols // group)
    padded = np.zeros((rows, ng * group), dtype=_F32)
    padded[:, :cols] = x.reshape(rows, cols)
    lengths = np.minimum(group, cols - np.arange(ng) * group)
    return padded.reshape(rows * ng, group), np.tile(lengths, rows), (rows, ng)


def _int_codes(g: np.ndarray, lengths: np.ndarray, fmt: F.Format) -> tuple[np.ndarray, np.ndarray]:
    """(code values in [qmin, qmax] [ngroups, glen], scale f32 [ngroups]) for one group layout."""
    if _is_sign_code(fmt):
        scale = mean_f32(np.abs(g), axis=1, count=lengths)  # padding zeros add nothing
        return np.where(g >= 0, fmt.qmax, fmt.qmin), scale
    scale = np.abs(g).max(axis=1) / _F32(max(-fmt.qmin, fmt.qmax))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.clip(np.rint(g / scale[:, None]), fmt.qmin, fmt.qmax)
    q = np.where(scale[:, None] > 0, q, 0)  # an all-zero group: the code of 0
    return q.astype(np.int64), scale


def _quantize_int(x: np.ndarray, fmt: F.Format, mode: str, group: int) -> QTensor:
    groups, lengths, scale_shape = _int_groups(x, mode, group)
    q, scale = _int_codes(groups, lengths, fmt)
    if mode == "group":  # drop the padding columns again, back to row-major elements
        cols = x.shape[-1]
        q = q.reshape(scale_shape[0], -1)[:, :cols]
    fields = (q.reshape(-1) + fmt.zero) // fmt.step  # value -> stored field
    data = pack_codes(fields, fmt, x.size)
    return QTensor(
        format=fmt, shape=x.shape, data=data, blocksize=group if mode == "group" else fmt.block,
        scale=scale.astype(_F32).reshape(scale_shape), scale_mode=mode,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# quantize: entry point
# --------------------------------------------------------------------------------------------


def quantize(
    x: Any,
    fmt: F.Format | str,
    blocksize: int | None = None,
    nested: bool = False,
    scale_mode: str = "row",
    group_size: int | None = None,
) -> QTensor:
    """Quantize a float array to `fmt` by the family's rule (module docstring); a validated QTensor.

    x: any float array (converted to float32, C-contiguous). blocksize: bnb block size (default the
    row's), for plain ints the group size of scale_mode "group" (group_size is an alias). nested:
    bnb4 nested statistics. scale_mode: plain ints only, "tensor" / "row" / "group".
    """
    fmt = _as_format(fmt)
    x = np.ascontiguousarray(np.asarray(x, dtype=_F32))
    if x.ndim == 0 or x.size == 0:
        raise QKGenValueError(f"x: shape {x.shape}; allowed: a non-empty array with at least one dimension")
    if nested and not fmt.nestable:
        raise QKGenValueError(f"nested: {fmt.name} has no nested statistics; allowed: "
                              f"{', '.join(f.name for f in F.ROWS if f.nestable)}")  # fmt: skip
    if fmt.family == "int":
        qt = _quantize_int(x, fmt, *_int_mode(fmt, blocksize, scale_mode, group_size))
    else:
        if group_size is not None:
            raise QKGenValueError(f"group_size: only for plain integer formats, not {fmt.name}")
        if fmt.family == "gguf":
            F.check_blocksize(fmt, blocksize)
            qt = _quantize_gguf(x, fmt)
        else:
            qt = _quantize_bnb(x, fmt, F.check_blocksize(fmt, blocksize), nested)
    validate(qt)
    return qt


def _int_mode(
    fmt: F.Format, blocksize: int | None, scale_mode: str, group_size: int | None
) -> tuple[str, int]:
    if scale_mode not in fmt.scale_modes:
        raise QKGenValueError(f"scale_mode: {scale_mode!r}; allowed: {', '.join(fmt.scale_modes)}")
    if group_size is not None and blocksize is not None and int(group_size) != int(blocksize):
        raise QKGenValueError(f"group_size: {group_size} differs from blocksize {blocksize}; give one")
    group = group_size if group_size is not None else blocksize
    if scale_mode != "group":
        if group is not None and int(group) != fmt.block:
            raise QKGenValueError(f"group_size: {group} is only used with scale_mode='group'")
        return scale_mode, fmt.block
    return scale_mode, F.check_blocksize(fmt, group)


__all__ = [
    "quantize", "dequantize", "round_to", "bf16_to_f32", "unpack_codes", "pack_codes",
    "code_values", "bnb_absmax", "nest_absmax", "mean_f32",
]  # fmt: skip
