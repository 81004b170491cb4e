"""quantize_device: the reference codec's quantization, run on a device (ops/quantize.py, one template).

Rows with inline blocks (GGUF) take one kernel; rows with separate statistics take quantize_stats
(absmax / scale per block, row or group) then quantize (the codes). Nested bitsandbytes statistics
add a host step and two more launches: the block absmax (nblocks f32) is downloaded, the offset is
reference.mean_f32 of it (summed in float64, rounded once to f32: the reference codec's own
function on bit-equal absmax, so the offset equals the reference's exactly; bitsandbytes' float32
torch mean can differ from both by 1-2 ulp), then absmax - offset is quantized 8-bit blockwise on
the device. The result equals `qkgen.quantize(x_host, format, **opts)` array by array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import QKGenValueError
from ..formats import QTensor, get, validate
from ..formats import reference as ref
from ..formats.codec import mean_f32
from ..kernels.ops import get_op
from .api import _open, x_dtype
from .plan import Plan, ready

_OPTS = ("blocksize", "nested", "scale_mode", "group_size")
# (magnitude mask, bits dtype): max |x| is the largest masked bit pattern (NaN above inf)
_MAGNITUDE = {"f32": (0x7FFFFFFF, "uint32"), "f16": (0x7FFF, "uint16"), "bf16": (0x7FFF, "uint16")}
F16_MAX = 65504.0


def _host_input(x: Any) -> Any:
    """numpy float64 and sequences as float32 (as the reference reads them); other arrays as given."""
    if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray):
        return x
    a = x if isinstance(x, np.ndarray) else np.asarray(x)
    if (a.dtype.kind in "iu" and a is not x) or a.dtype == np.float64:  # integers only as Python sequences
        a = a.astype(np.float32)
    return np.ascontiguousarray(a)


def _host_copy(x: Any, dtype: str, dev) -> np.ndarray:
    """A float32 host copy of x (only where a check needs the values themselves)."""
    if isinstance(x, np.ndarray):
        return ref.host_f32(x, dtype)
    if hasattr(x, "detach"):
        return x.detach().float().cpu().numpy()
    if hasattr(x, "get"):
        host = x.get()
    elif hasattr(x, "to_host"):
        host = x.to_host()
    else:
        host = dev.download(x, dtype, int(np.prod(x.shape)))
    return ref.host_f32(np.asarray(host).reshape(-1), dtype)


def _amax(x: Any, dtype: str, dev) -> float:
    """max |x| as a float (inf or NaN where x holds a non-finite value), computed where x lives."""
    mask, bits = _MAGNITUDE[dtype]
    if hasattr(x, "detach"):
        return float(x.detach().abs().max().float().item())
    if not isinstance(x, np.ndarray) and type(x).__module__.startswith("pyopencl"):
        try:  # the magnitude bits' maximum, on the device (pyopencl's reductions need mako)
            import pyopencl.array as cla

            top = int(cla.max(x.view(np.dtype(bits)) & np.dtype(bits).type(mask)).get())
        except ImportError:
            top = None
        if top is not None:
            f = np.array(top, dtype=bits)
            return float(ref.bf16_to_f32(f) if dtype == "bf16" else f.view({"f32": np.float32}.get(dtype, np.float16)))
    host = _host_copy(x, dtype, dev)
    return float(np.max(np.abs(host)))


def _refuse(x: Any, dtype: str, dev, shape, fmt) -> None:
    """Raise the reference codec's error for input holding a non-finite value (it names the index)."""
    ref.quantize(_host_copy(x, dtype, dev).reshape(shape), fmt)
    raise QKGenValueError("x: holds a non-finite value; allowed: finite values")  # not reached


def _check(x: Any, fmt, opts: dict) -> tuple[tuple[int, ...], QTensor]:
    """(shape, a probe QTensor holding the resolved blocksize / scale_mode / nested), or the error the
    reference codec gives for these options; nothing has run on a device yet."""
    unknown = sorted(set(opts) - set(_OPTS) - {"allow_nonfinite"})
    if unknown:
        raise QKGenValueError(f"opts: unknown option(s) {unknown}; allowed: {', '.join(_OPTS)}, allow_nonfinite")
    if opts.get("allow_nonfinite", False) is not False:
        raise QKGenValueError("allow_nonfinite: the device quantizer takes finite input only; allowed: False "
                              "(quantize non-finite input on the host: qkgen.formats.reference.quantize)")  # fmt: skip
    get_op("quantize").check_format(fmt)
    shape = tuple(int(s) for s in getattr(x, "shape", ()))
    if not shape or 0 in shape:
        raise QKGenValueError(f"x: shape {shape}; allowed: a non-empty array with at least one dimension")
    kw = {k: v for k, v in opts.items() if k in _OPTS}
    probe = ref.quantize(np.ones((1, fmt.block if fmt.inline else 64), np.float32), fmt, **kw)  # the option rules
    n = int(np.prod(shape))
    if fmt.inline and n % fmt.block:
        raise QKGenValueError(f"x: {n} elements; {fmt.name} needs a multiple of {fmt.block}")
    return shape, probe


def on_device(x: Any) -> bool:
    """Whether x lives on a device: a torch tensor off the CPU, a pyopencl array, a USM array."""
    if isinstance(x, np.ndarray) or not hasattr(x, "shape"):
        return False
    dev = getattr(x, "device", None)
    if hasattr(x, "detach"):  # torch
        return getattr(dev, "type", "cpu") != "cpu"
    return hasattr(x, "queue") or hasattr(x, "__sycl_usm_array_interface__") or hasattr(x, "gpudata")


def quantize(array: Any, format: Any, backend: str | None = None, device: Any = None, **opts) -> QTensor:
    """Quantize with the reference codec (bit-exact with bitsandbytes / gguf), on the host; or, when
    `array` is a device array or a backend/device is named, on that device with the generated
    quantize kernels (equal array by array to the host result; device arrays come back).

    opts: blocksize (bitsandbytes formats), nested (nf4/fp4 nested statistics), scale_mode
    ("tensor", "row", "group") and group_size (plain integer formats), allow_nonfinite (host only).
    """
    if backend is None and device is None and not on_device(array):
        return ref.quantize(array, format, **opts)
    return quantize_device(array, format, backend=backend, device=device, **opts)


def quantize_device(x: Any, format: Any, backend: str | None = None, device: Any = None, **opts) -> QTensor:
    """Quantize x on a device, equal array by array to `qkgen.quantize(x_host, format, **opts)`.

    x: a device array of the backend (its arrays come back as device arrays) or a numpy array
    (numpy arrays come back); f32, f16 or bf16 (on the host bf16 travels as uint16 bits). opts:
    blocksize, nested, scale_mode, group_size as the reference takes them. Non-finite input is
    refused (a QKGenValueError naming the first such index), as by the reference.
    """
    fmt = get(format)
    x = _host_input(x)
    shape, probe = _check(x, fmt, opts)
    dtype = x_dtype(x)
    dev = _open(backend, device)
    native = dev.is_native(x)
    amax = _amax(x, dtype, dev) if fmt.inline else 0.0  # separate statistics: checked after quantize_stats
    if not np.isfinite(amax):
        _refuse(x, dtype, dev, shape, fmt)
    like = x if native else None
    n = int(np.prod(shape))
    if fmt.inline:
        plan = Plan.make(dev, "quantize", fmt, dtype=dtype)
        sizes = {"nblocks": n // fmt.block, "code_bytes": n // fmt.block * fmt.block_bytes}
        (buf, arr, _), = plan.outputs(sizes, like=like).values()
        plan.launch({"x": x, "data": buf}, sizes)
        arrays, offset = {"data": (arr, "u8", sizes["code_bytes"], (sizes["code_bytes"],))}, None
    else:
        arrays, offset = _separate(dev, x, fmt, probe, shape, dtype, like)
    out = {k: (a.reshape(s) if native else dev.download(a, dt, c).reshape(s)) for k, (a, dt, c, s) in arrays.items()}
    qt = QTensor(format=fmt, shape=shape, blocksize=probe.blocksize, scale_mode=probe.scale_mode, offset=offset, **out)
    validate(qt)
    if fmt.inline and amax >= F16_MAX / 2:  # an f16 d (or m) may overflow: the reference refuses that input
        ref._check_finite_statistics(qt if not native else
                                     qt.with_arrays(data=dev.download(arrays["data"][0], "u8", qt.data_bytes)))
    return qt


def _separate(dev, x, fmt, probe: QTensor, shape, dtype: str, like) -> tuple[dict, float | None]:
    """quantize_stats then quantize (and the nested statistics step): ({name: (array, dtype, count,
    shape)}, the nested offset or None)."""
    n = int(np.prod(shape))
    cols = shape[-1]
    bs, mode, nested = probe.blocksize, probe.scale_mode, probe.nested
    sizes: dict[str, Any] = {"n": n}
    if mode in ("row", "group"):
        sizes.update(cols=cols, groups_per_row=-(-cols // bs))
    rows = n // cols
    units = {"tensor": 1, "row": rows, "group": rows * -(-cols // bs)}.get(mode, -(-n // bs))
    sizes.update(units=units, code_bytes=-(-n * fmt.low_bits // 8))
    kw = dict(dtype=dtype, blocksize=bs, scale_mode=mode)
    stats_plan = Plan.make(dev, "quantize_stats", fmt, **kw)
    (sbuf, sarr, _), = stats_plan.outputs(sizes, like=like).values()
    stats_plan.launch({"x": x, "stats": sbuf}, sizes)
    absmax = dev.download(sarr, "f32", units)  # units floats: the finiteness check (and the nested offset)
    if not np.isfinite(absmax).all():  # a block, row or group holds a non-finite value
        _refuse(x, dtype, dev, shape, fmt)
    codes_plan = Plan.make(dev, "quantize", fmt, **kw)
    (cbuf, carr, _), = codes_plan.outputs(sizes, like=like).values()
    codes_plan.launch({"x": x, "stats": ready(sbuf), "data": cbuf}, sizes)
    out = {"data": (carr, "u8", sizes["code_bytes"], (sizes["code_bytes"],))}
    stat_shape = {"tensor": (1,), "row": (rows,), "group": (rows, -(-cols // bs))}.get(mode, (units,))
    if not nested:
        out["scale" if mode else "absmax"] = (sarr, "f32", units, stat_shape)
        return out, None
    # nested: the offset on the host (module docstring), then absmax - offset 8-bit blockwise
    offset = float(mean_f32(absmax))
    nsizes = {"n": units, "offset": offset, "units": -(-units // fmt.nested_block), "code_bytes": units}
    n_stats = Plan.make(dev, "quantize_stats", fmt, dtype="f32", nested=True)
    (s2buf, s2arr, _), = n_stats.outputs(nsizes, like=like).values()
    n_stats.launch({"x": ready(sbuf), "stats": s2buf}, nsizes)
    n_codes = Plan.make(dev, "quantize", fmt, dtype="f32", nested=True)
    (qbuf, qarr, _), = n_codes.outputs(nsizes, like=like).values()
    n_codes.launch({"x": ready(sbuf), "stats": ready(s2buf), "data": qbuf}, nsizes)
    out.update(absmax_q=(qarr, "u8", units, (units,)), absmax2=(s2arr, "f32", nsizes["units"], (nsizes["units"],)))
    return out, offset
