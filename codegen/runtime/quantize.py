"""quantize_device: the reference codec's quantization, run on a device (ops/quantize.py, one template).

Rows with inline blocks (GGUF) take one kernel ("quantize"); rows with an absmax per block
(bitsandbytes) take one ("quantize_blockwise": absmax and codes in one pass); rows with a scale per
row, group or tensor take quantize_stats (the scales) then quantize (the codes). Every kernel that
reads x sets flags in a zeroed status word pair instead of the host scanning x: status[0] for a
non-finite value (the host then names it, through the reference codec's own error), status[1] for
an f16 statistic stored as inf (the reference's overflow check then runs on the result). Reading
the flags is the call's one synchronization.

Nested bitsandbytes statistics add three launches: exact_sum adds the block absmax as integers
(runtime/reduce.py: a few KB come back, not the absmax), the offset is their exact mean rounded
once to f32 (codec.exact_mean_f32, the reference's own offset, so the two are equal bit for bit;
bitsandbytes' float32 torch mean can differ from it by 1-2 ulp), then absmax - offset is quantized
8-bit blockwise on the device. The result equals `qkgen.quantize(x_host, format, **opts)` array
by array.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from ..errors import QKGenValueError
from ..formats import QTensor, get, validate
from ..formats import reference as ref
from ..kernels.ops import get_op
from .api import _open, x_dtype
from .quantize_knobs import blockwise_knobs, quantize_knobs
from .plan import Bound, Plan, ready
from .reduce import device_exact_mean

_OPTS = ("blocksize", "nested", "scale_mode", "group_size")


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


def _refuse(x: Any, dtype: str, dev, shape, fmt) -> None:
    """Raise the reference codec's error for input holding a non-finite value (it names the index)."""
    ref.quantize(_host_copy(x, dtype, dev).reshape(shape), fmt)
    raise QKGenValueError("x: holds a non-finite value; allowed: finite values")  # not reached


@functools.lru_cache(maxsize=256)
def _probe(fmt, kw: tuple) -> QTensor:
    """The reference's result on a small block with these options: their rules applied once per kind of call."""
    return ref.quantize(np.ones((1, fmt.block if fmt.inline else 64), np.float32), fmt, **dict(kw))


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
    kw = tuple(sorted((k, v) for k, v in opts.items() if k in _OPTS))
    try:
        probe = _probe(fmt, kw)
    except TypeError:  # an unhashable option value: the reference names it
        probe = _probe.__wrapped__(fmt, kw)
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
    if native and not probe.nested:
        return _bound_call(dev, x, fmt, probe, shape, dtype)
    like = x if native else None
    sizes, shapes = _sizes(fmt, probe, shape)
    made = _launch(_plans(dev, fmt, probe, dtype), x, sizes, like)
    arrays = {k: (made[_OUTPUT.get(k, k)][1], "u8" if k == "data" else "f32", int(np.prod(s)), s)
              for k, s in shapes.items()}  # fmt: skip
    offset = None
    if probe.nested:  # the block absmax become absmax_q and absmax2
        offset, nested = _nested(dev, fmt, made["absmax"][0], sizes["units"], like)
        del arrays["absmax"]
        arrays.update(nested)
    flags = dev.download(made["status"][1], "u32", 2)
    if flags[0]:  # a value is not finite: the reference codec names the first
        _refuse(x, dtype, dev, shape, fmt)
    out = {k: (a.reshape(s) if native else dev.download(a, dt, c).reshape(s)) for k, (a, dt, c, s) in arrays.items()}
    qt = QTensor(format=fmt, shape=shape, blocksize=probe.blocksize, scale_mode=probe.scale_mode, offset=offset, **out)
    validate(qt)
    if flags[1]:  # an f16 statistic is inf: the reference refuses that input where its decode would overflow
        ref._check_finite_statistics(qt if not native else
                                     qt.with_arrays(data=dev.download(arrays["data"][0], "u8", qt.data_bytes)))
    return qt


def _sizes(fmt, probe: QTensor, shape) -> tuple[dict, dict]:
    """(launch sizes, {output name: its shape in the QTensor}) of a quantize call."""
    n = int(np.prod(shape))
    if fmt.inline:
        nbytes = n // fmt.block * fmt.block_bytes
        return {"nblocks": n // fmt.block, "code_bytes": nbytes}, {"data": (nbytes,)}
    cols, bs, mode = shape[-1], probe.blocksize, probe.scale_mode
    sizes: dict[str, Any] = {"n": n}
    if mode in ("row", "group"):
        sizes.update(cols=cols, groups_per_row=-(-cols // bs))
    rows = n // cols
    units = {"tensor": 1, "row": rows, "group": rows * -(-cols // bs)}.get(mode, -(-n // bs))
    sizes.update(units=units, code_bytes=-(-n * fmt.low_bits // 8))
    stat_shape = {"tensor": (1,), "row": (rows,), "group": (rows, -(-cols // bs))}.get(mode, (units,))
    return sizes, {"data": (sizes["code_bytes"],), ("scale" if mode else "absmax"): stat_shape}


# Warm calls on device arrays: the plans, geometry, launchers and allocators of one kind of call
# (device, format, options, dtype, shape, array type), worked out at its first call.
_BOUND: dict[tuple, tuple] = {}
_BOUND_MAX = 64


def _bound_call(dev, x, fmt, probe: QTensor, shape, dtype: str) -> QTensor:
    """quantize_device's result for device-array input without nested statistics, through a Bound
    call (plan.py): the same kernels and flags as the general path, less of its per-call work. The
    QTensor's arrays are the kernels' own outputs at the sizes the plans were made for, so it is
    not validated again."""
    # per thread: the flags buffer is the Bound's own (plan.py), read after each call's launches
    key = (id(dev), fmt.name, probe.blocksize, probe.scale_mode, dtype, shape, type(x), threading.get_ident())
    hit = _BOUND.get(key)
    if hit is None or hit[0] is not dev:
        sizes, shapes = _sizes(fmt, probe, shape)
        steps = [(plan, sizes) for plan in _plans(dev, fmt, probe, dtype)]
        bound = Bound(steps, {}, {"x": x}, x, tuple(_OUTPUT.get(k, k) for k in (*shapes, "status")), None)
        if len(_BOUND) >= _BOUND_MAX:
            _BOUND.pop(next(iter(_BOUND)), None)  # the oldest kind of call
        hit = _BOUND[key] = (dev, bound, shapes)
    _, bound, shapes = hit
    arrays = bound({"x": x}, x)
    flags = dev.download(arrays["status"], "u32", 2)  # the call's one synchronization
    if flags.any():  # the flags stay set in the Bound's buffer: a later call makes a new one
        _BOUND.pop(key, None)
    if flags[0]:  # a value is not finite: the reference codec names the first
        _refuse(x, dtype, dev, shape, fmt)
    got = {k: arrays[_OUTPUT.get(k, k)].reshape(s) for k, s in shapes.items()}
    qt = QTensor(format=fmt, shape=shape, blocksize=probe.blocksize, scale_mode=probe.scale_mode, **got)
    if flags[1]:  # an f16 statistic is inf: the reference refuses that input where its decode would overflow
        ref._check_finite_statistics(qt.with_arrays(data=dev.download(got["data"], "u8", qt.data_bytes)))
    return qt


def _plans(dev, fmt, probe: QTensor, dtype: str) -> list[Plan]:
    """The kernels of a call, in launch order (nested statistics' second level aside): quantize for
    inline rows, quantize_blockwise for an absmax per block, quantize_stats then quantize for a scale
    per row, group or tensor."""
    if fmt.inline:  # knobs: shapes measured faster on this kind of device
        return [Plan.make(dev, "quantize", fmt, dtype=dtype, **quantize_knobs(dev.target, fmt))]
    kw = dict(dtype=dtype, blocksize=probe.blocksize, scale_mode=probe.scale_mode)
    if probe.scale_mode is None:
        return [Plan.make(dev, "quantize_blockwise", fmt, **kw, **blockwise_knobs(dev.target, fmt, dtype, probe.blocksize))]
    return [Plan.make(dev, "quantize_stats", fmt, **kw), Plan.make(dev, "quantize", fmt, **kw)]


# A QTensor array's kernel output, where the names differ
_OUTPUT = {"scale": "stats"}


def _launch(plans: list[Plan], x: Any, sizes: dict, like) -> dict[str, tuple[Any, Any]]:
    """Launch plans in order, each taking the earlier ones' outputs by name: {output: (buffer, array)}."""
    inputs: dict[str, Any] = {"x": x}
    made = {}
    for plan in plans:
        outs = plan.outputs(sizes, like=like)
        plan.launch({**inputs, **{k: buf for k, (buf, _, _) in outs.items()}}, sizes)
        for k, (buf, arr, _) in outs.items():
            inputs[k], made[k] = ready(buf), (buf, arr)
    return made


def _nested(dev, fmt, absmax, units: int, like) -> tuple[float | None, dict]:
    """The nested statistics of the block absmax (a device buffer): (offset, {name: (array, dtype,
    count, shape)}); (None, {}) where an absmax is not finite (the caller refuses x by its flags)."""
    try:  # the offset from the absmax's exact sum (module docstring)
        offset = float(device_exact_mean(dev, ready(absmax), units, like=like))
    except QKGenValueError:
        return None, {}
    # then absmax - offset, 8-bit blockwise
    nsizes = {"n": units, "offset": offset, "units": -(-units // fmt.nested_block), "code_bytes": units}
    plans = [Plan.make(dev, op, fmt, dtype="f32", nested=True) for op in ("quantize_stats", "quantize")]
    made = _launch(plans, ready(absmax), nsizes, like)
    return offset, {"absmax_q": (made["data"][1], "u8", units, (units,)),
                    "absmax2": (made["stats"][1], "f32", nsizes["units"], (nsizes["units"],))}
