"""The Python API: quantize with the reference codec, run kernels on a device.

Each op renders its kernel for the chosen device (render() is cached), compiles it through the
backend (cached in memory and on disk), binds arguments by name and launches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import formats as F

from .errors import QKGenValueError
from .qtensor import QTensor, validate
from .render import KernelSource, render

_DTYPE_ALIASES = {
    "f32": "f32", "float32": "f32", "float": "f32",
    "f16": "f16", "float16": "f16", "half": "f16",
    "bf16": "bf16", "bfloat16": "bf16",
}  # fmt: skip

# Debug aid used by tests and `qkgen check`: fill outputs with NaN bytes before a kernel runs.
POISON_OUTPUTS = False
MAX_ELEMENTS = 2**32 - 1  # kernels index elements with 32-bit integers
MAX_M = 8  # gemv: rows of x one launch takes


def dtype_name(dtype: Any) -> str:
    """'f32' | 'f16' | 'bf16' from a name, a numpy dtype or a torch dtype."""
    key = str(dtype).replace("torch.", "").lower()
    if key in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[key]
    try:
        key = np.dtype(dtype).name
    except TypeError:
        pass
    if key in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[key]
    raise QKGenValueError(f"dtype: {dtype!r} is not supported; allowed: f32, f16, bf16")


def quantize(array: Any, format: str | F.Format, **opts) -> QTensor:
    """Quantize a host array with the reference codec (bit-exact with bitsandbytes / gguf).

    opts: blocksize (bitsandbytes formats), nested (nf4/fp4 nested statistics), scale_mode
    ("tensor", "row", "group") and group_size (plain integer formats).
    """
    from . import reference

    fmt = format if isinstance(format, F.Format) else F.get(format)
    if hasattr(array, "detach"):  # torch tensors: quantized on the host
        array = array.detach().float().cpu().numpy()
    return reference.quantize(np.asarray(array), fmt, **opts)


def _scalars(qt: QTensor, **more) -> dict[str, Any]:
    return {"n": qt.n, "offset": qt.offset or 0.0, "cols": qt.cols, "groups_per_row": qt.groups_per_row, **more}


# numpy dtype names an input argument accepts (bf16 on the host: uint16 bit patterns).
X_DTYPES = {"f32": ("float32",), "f16": ("float16",), "bf16": ("bfloat16", "uint16")}


def _arg_values(dev, ks: KernelSource, inputs: dict[str, Any], outputs: dict[str, Any], scalars: dict) -> list:
    vals = []
    for a in ks.args:
        if a.kind == "in" and a.name in outputs:  # a device buffer an earlier launch wrote: as it is
            vals.append(outputs[a.name])
        elif a.kind == "in":
            expected = {"float": ("float32",), "x": X_DTYPES[ks.param("dtype")]}.get(a.ctype, ("uint8",))
            vals.append(dev.as_input(inputs[a.name], a.name, expected))
        elif a.kind == "out":
            vals.append(outputs[a.name])
        elif a.kind == "local":
            vals.append(dev.local_arg(a.ctype, a.count))
        elif a.kind == "u32":
            vals.append(np.uint32(scalars[a.name]))
        else:
            vals.append(np.float32(scalars[a.name]))
    return vals


def prepare_dequantize(qt: QTensor, dtype: Any = "f32", backend: str | None = None,
                       device: int | str | None = None):  # fmt: skip
    """(device, kernel source, compiled kernel) for dequantizing qt: what bench and check reuse."""
    from .backends import open_device

    if not isinstance(qt, QTensor):
        raise QKGenValueError(f"qtensor: expected a QTensor, got {type(qt).__name__}")
    validate(qt)
    if qt.n > MAX_ELEMENTS:
        raise QKGenValueError(f"shape: {qt.shape} has {qt.n} elements; allowed: at most {MAX_ELEMENTS}")
    dev = open_device(backend, device)
    ks = render("dequantize", qt.format, dev.backend, dtype=dtype_name(dtype), blocksize=qt.blocksize,
                nested=qt.nested, scale_mode=qt.scale_mode, caps=dev.caps)  # fmt: skip
    return dev, ks, dev.compile(ks)


def launch_dequantize(dev, ks: KernelSource, qt: QTensor, out_buf) -> tuple[list, int, int]:
    """Argument list and launch geometry (global, local) of a dequantize kernel."""
    args = _arg_values(dev, ks, qt.arrays(), {"out": out_buf}, _scalars(qt))
    items = -(-qt.n // ks.per_item)
    return args, -(-items // ks.wg) * ks.wg, ks.wg


def dequantize(qt: QTensor, dtype: Any = "f32", backend: str | None = None, device: int | str | None = None):
    """Dequantize on a device. Returns an array of qt.shape in dtype: the backend's own array type
    when the inputs are device arrays (no copies), numpy when they are numpy (bf16 as uint16 bits)."""
    dev, ks, kernel = prepare_dequantize(qt, dtype, backend, device)
    native = dev.is_native(qt.data)
    out_buf, out = dev.empty(qt.n, ks.param("dtype"), like=qt.data if native else None, poison=POISON_OUTPUTS)
    args, gsize, lsize = launch_dequantize(dev, ks, qt, out_buf)
    dev.launch(kernel, args, gsize, lsize)
    if native:
        return out.reshape(qt.shape)
    return dev.download(out, ks.param("dtype"), qt.n).reshape(qt.shape)


def _shape_of(a: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in a.shape)


def x_dtype(x: Any) -> str:
    """The activation dtype of x: 'f32' | 'f16' | 'bf16' (on the host bf16 travels as uint16 bits)."""
    is_bits = isinstance(x, np.ndarray) and x.dtype == np.uint16
    try:
        return "bf16" if is_bits else dtype_name(getattr(x, "dtype", None))
    except QKGenValueError:
        raise QKGenValueError(f"x: dtype {getattr(x, 'dtype', None)}; allowed: float32, float16, bfloat16 "
                              "(on the host: uint16 bf16 bits)") from None


def gemv_inputs(qt: QTensor, x: Any) -> tuple[int, int, int, str]:
    """(N, K, M, dtype) of y = x @ W.T after validating the weight qt and the activations x."""
    if not isinstance(qt, QTensor):
        raise QKGenValueError(f"qtensor: expected a QTensor, got {type(qt).__name__}")
    validate(qt)
    if len(qt.shape) != 2:
        raise QKGenValueError(f"qtensor.shape: {qt.shape}; allowed: a 2-D weight [N, K]")
    n_out, k = qt.shape
    xshape = _shape_of(x)
    if len(xshape) == 1:
        xshape = (1, xshape[0])
    if len(xshape) != 2 or xshape[1] != k or not 1 <= xshape[0] <= MAX_M:
        raise QKGenValueError(f"x.shape: {_shape_of(x)}; allowed: [M, {k}] or [{k}] with 1 <= M <= {MAX_M}")
    return n_out, k, xshape[0], x_dtype(x)


def prepare_gemv(qt: QTensor, x: Any, backend: str | None = None, device: int | str | None = None,
                 fast_decode: bool = True):  # fmt: skip
    """(device, kernel source, compiled kernel, (N, K, M)) of the float-path GEMV of qt and x:
    what gemv and bench reuse."""
    from .backends import open_device

    n_out, k, m, dtype = gemv_inputs(qt, x)
    dev = open_device(backend, device)
    ks = render("gemv", qt.format, dev.backend, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                scale_mode=qt.scale_mode, caps=dev.caps, mmax=1 if m == 1 else MAX_M,
                **({} if fast_decode else {"fast_decode": False}))  # fmt: skip
    ept = ks.param("ept")
    if k % ept:
        raise QKGenValueError(f"x.shape: K={k} must be a multiple of {ept} for {qt.describe()}")
    return dev, ks, dev.compile(ks), (n_out, k, m)


def launch_gemv(dev, ks: KernelSource, qt: QTensor, x: Any, y_buf, shape: tuple[int, int, int]) -> tuple[list, int, int]:
    """Argument list and launch geometry (global, local) of a gemv kernel; shape is (N, K, M)."""
    n_out, k, m = shape
    args = _arg_values(dev, ks, {**qt.arrays(), "x": x}, {"y": y_buf}, _scalars(qt, N=n_out, K=k, M=m))
    return args, -(-n_out // ks.per_item) * ks.wg, ks.wg


def gemv(qt: QTensor, x: Any, path: str = "float", backend: str | None = None, device: int | str | None = None,
         fast_decode: bool = True):  # fmt: skip
    """y = x @ W.T for a quantized weight W (qt, shape [N, K]) and activations x [M, K], M <= 8.

    y is [M, N] in x's dtype (f32, f16 or bf16), accumulated in f32; a backend's own array type
    when x is one, numpy when x is numpy. path "float" decodes W in registers and multiplies in
    f32; path "int8dot" (GGUF formats) quantizes x to q8_1 first and uses 4-way int8 dot products.
    """
    if path not in ("float", "int8dot"):
        raise QKGenValueError(f"path: {path!r}; allowed: float, int8dot")
    if path == "int8dot":
        from .int8dot import gemv_int8dot

        return gemv_int8dot(qt, x, backend=backend, device=device)
    dev, ks, kernel, shape = prepare_gemv(qt, x, backend, device, fast_decode)
    n_out, _, m = shape
    native = dev.is_native(x)
    y_buf, y = dev.empty(m * n_out, ks.param("dtype"), like=x if native else None, poison=POISON_OUTPUTS)
    args, gsize, lsize = launch_gemv(dev, ks, qt, x, y_buf, shape)
    dev.launch(kernel, args, gsize, lsize)
    if native:
        return y.reshape(m, n_out)
    return dev.download(y, ks.param("dtype"), m * n_out).reshape(m, n_out)
