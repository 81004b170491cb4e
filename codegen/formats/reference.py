"""Reference codecs in numpy: the oracle every generated kernel is tested against.

Dequantization is what a kernel must compute, in float32, operation by operation:

    table codes:  table[q] * s                      one f32 multiply
    int codes:    f32(q*step - zero) * s            the integer is exact in f32, one f32 multiply
    scale d_m:    f32(q * d) + m                    two roundings, no fused multiply-add

where s is absmax[block] (bitsandbytes), d read as f16 (GGUF) or scale[tensor|row|group] (plain
ints). Nested bitsandbytes statistics are absmax[b] = f32(f32(code2[absmax_q[b]] * absmax2[b // 256])
+ offset). Quantization follows each family's rule, stated in its module (bnb4, bnb8, gguf,
plain_int). The offset of nested statistics is the float32 nearest to the exact mean of the block
absmax (codec.exact_mean_f32: integer sums, one rounding; no summation order changes it, so a device
gets it bit for bit); the mean of int1 scales is summed in float64 and rounded once to float32
(mean_f32). Both equal bitsandbytes' float32 torch mean whenever that sum is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import QKGenValueError
from .bnb8 import absmax_of as bnb_absmax
from .bnb8 import nest_absmax as _nest_absmax
from . import codec
from .codec import bf16_to_f32, exact_mean_f32, host_array, mean_f32, round_to
from .family import family_of
from . import layout as _layout
from .qtensor import QTensor, validate
from .registry import get

_F32 = np.float32


def _float_input(x: Any, allow_nonfinite: bool) -> np.ndarray:
    """x as a C-contiguous float32 array with at least one dimension, or a QKGenValueError."""
    if hasattr(x, "detach"):  # torch: any float dtype, bf16 included, read on the host
        if not x.is_floating_point():
            raise QKGenValueError(f"x: torch dtype {x.dtype}; allowed: a floating-point tensor")
        x = x.detach().float().cpu().numpy()
    elif not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise QKGenValueError(f"x: {type(x).__name__} is not an array ({e}); allowed: a float array") from None
        if x.dtype.kind in "iu":  # Python / numpy integers given as a sequence
            x = x.astype(np.float64)
    if x.dtype.kind != "f":
        hint = " (bf16 bit patterns? convert them with qkgen.formats.reference.bf16_to_f32)" \
            if x.dtype == np.uint16 else ""  # fmt: skip
        raise QKGenValueError(f"x: dtype {x.dtype}{hint}; allowed: float16, float32, float64 (or a torch float tensor)")
    if x.ndim == 0 or x.size == 0:
        raise QKGenValueError(f"x: shape {x.shape}; allowed: a non-empty array with at least one dimension")
    x = np.ascontiguousarray(x, dtype=_F32)
    if not allow_nonfinite:
        bad = ~np.isfinite(x)
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise QKGenValueError(f"x: {x[at]} at index {at} is not finite; allowed: finite values (or "
                                  "allow_nonfinite=True: the block, group or row holding it decodes to NaN/inf)")
    return x


def quantize(x: Any, fmt: Any, blocksize: int | None = None, nested: bool = False, scale_mode: str | None = None,
             group_size: int | None = None, allow_nonfinite: bool = False) -> QTensor:  # fmt: skip
    """Quantize a float array to `fmt` by its family's rule; a validated QTensor.

    blocksize: the block size (bitsandbytes), for plain ints the group size of scale_mode "group"
    (group_size is an alias). nested: bitsandbytes 4-bit nested statistics. scale_mode: plain ints,
    "tensor" / "row" (default) / "group". Non-finite input is rejected unless allow_nonfinite.
    """
    fmt = get(fmt)
    fam = family_of(fmt)
    if not isinstance(nested, bool):
        raise QKGenValueError(f"nested: {nested!r}; allowed: True or False")
    if group_size is not None and fam.blocksize_arg != "group_size":
        raise QKGenValueError(f"group_size: only for plain integer formats, not {fmt.name}")
    x = _float_input(x, allow_nonfinite)
    qt = fam.quantize(x, fmt, blocksize, nested, scale_mode, group_size)
    validate(qt)
    if not allow_nonfinite:
        _check_finite_statistics(qt)
    return qt


def _check_finite_statistics(qt: QTensor) -> None:
    """Finite input whose scale overflows its storage (an f16 d above 65504) decodes to inf: refuse."""
    fmt = qt.format
    scale, mn = family_of(fmt).element_scales(qt, host_array(qt.data))
    for what, v in (("scale", scale), ("min", mn)):
        if v is not None and not np.isfinite(v).all():
            at = int(np.argmin(np.isfinite(v)))
            raise QKGenValueError(f"x: the {what} of the block holding element {at} overflows {fmt.name}'s "
                                  "storage; allowed: values whose scale fits (f16 scales: |d| <= 65504)")  # fmt: skip


def host_f32(host: Any, dtype: str) -> np.ndarray:
    """A host copy of kernel data in `dtype` (f32, f16, or bf16 as uint16 bits) as float32 values."""
    return bf16_to_f32(host) if dtype == "bf16" else np.asarray(host, dtype=_F32)


def unpack_codes(qt: QTensor) -> np.ndarray:
    """Raw codes per element, int32 array of qt.shape (table index, stored field, or signed value)."""
    return codec.unpack_codes(qt.format, host_array(qt.data), qt.n).reshape(qt.shape)


def dequantize(qt: QTensor) -> np.ndarray:
    """float32 values of qt, shape qt.shape, computed exactly as the kernels must (module docstring)."""
    validate(qt)
    data = host_array(qt.data)
    values = codec.code_values(qt.format, codec.unpack_codes(qt.format, data, qt.n))
    scale, m = family_of(qt.format).element_scales(qt, data)
    with np.errstate(over="ignore", invalid="ignore"):  # IEEE results (inf, NaN) are the reference too
        out = values * scale  # one f32 multiply
        if m is not None:
            out = out + m  # rounded separately: kernels must not fuse this into an fma
    return out.reshape(qt.shape)


def to_planes(qt: QTensor) -> np.ndarray:
    """qt's blocks regrouped into the planes layout (formats.layout): one plane per field, every
    block's field in block order; uint8, as long as qt.data. The repack kernel's oracle."""
    validate(qt)
    return _layout.to_planes(qt.format, host_array(qt.data))


def from_planes(fmt: Any, planes: Any) -> np.ndarray:
    """The block bytes of a planes buffer of `fmt` (a row or its name): the inverse of to_planes."""
    return _layout.from_planes(get(fmt), host_array(planes))


def pack_codes(codes: Any, fmt: Any, n: int, fill: int = 0) -> np.ndarray:
    """Pack n raw codes the way `fmt` (a row or its name) stores them (see codec.pack_codes)."""
    return codec.pack_codes(codes, get(fmt), n, fill)


def code_values(fmt: Any, codes: Any) -> np.ndarray:
    """What codes mean before scaling, as float32: table[q] or the integer q*step - zero."""
    return codec.code_values(get(fmt), codes)


def nest_absmax(absmax: Any, fmt: Any, offset: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Nested statistics (absmax_q, absmax2, offset) of a nestable row (see bnb8.nest_absmax)."""
    fmt = get(fmt)
    family_of(fmt).check_variant(fmt, True, None)
    return _nest_absmax(absmax, fmt, offset)


__all__ = [
    "quantize", "dequantize", "round_to", "bf16_to_f32", "host_f32", "unpack_codes", "pack_codes",
    "code_values", "to_planes", "from_planes", "bnb_absmax", "nest_absmax", "mean_f32",
    "exact_mean_f32",
]  # fmt: skip
