"""The integer-dot GEMV path (llama.cpp's mmvq idea, qkgen's own kernels): the activations are
quantized to q8_1 on the device (quantize_q8_1, bit-identical to reference.quantize(x, "q8_1")),
then each weight block meets the activation block of the same K range in 4-way int8 dot products
(gemv_int8dot). GGUF weight formats only: their codes are small integers with one f16 scale per
32 elements, which is what q8_1 pairs with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import api
from . import formats as F
from .errors import QKGenValueError
from .qtensor import QTensor
from .render import INT8DOT_ACT, INT8DOT_FORMATS, render


def _act() -> F.Format:
    return F.get(INT8DOT_ACT)


def _check_k(k: int, what: str) -> None:
    block = _act().block
    if k % block:
        raise QKGenValueError(f"x.shape: K={k} must be a multiple of {block} for {what}")


def prepare_quantize(dev, m: int, k: int, dtype: str) -> tuple[Any, Any, int]:
    """(kernel source, compiled kernel, q8_1 blocks) of quantizing x [m, k] in dtype on dev."""
    ks = render("quantize_q8_1", _act(), dev.backend, dtype=dtype, caps=dev.caps)
    return ks, dev.compile(ks), m * k // _act().block


def launch_quantize(dev, ks, x: Any, xq_buf, nblocks: int) -> tuple[list, int, int]:
    """Argument list and launch geometry of the q8_1 quantizer writing xq_buf."""
    args = api._arg_values(dev, ks, {"x": x}, {"xq": xq_buf}, {"nblocks": nblocks})
    return args, -(-nblocks // ks.wg) * ks.wg, ks.wg


def prepare_gemv_int8dot(dev, qt: QTensor, m: int, dtype: str) -> tuple[Any, Any]:
    """(kernel source, compiled kernel) of the int8dot GEMV of weight qt for M = m."""
    ks = render("gemv_int8dot", qt.format, dev.backend, dtype=dtype, caps=dev.caps, mmax=1 if m == 1 else api.MAX_M)
    return ks, dev.compile(ks)


def launch_gemv_int8dot(dev, ks, qt: QTensor, xq_buf, y_buf, shape: tuple[int, int, int]) -> tuple[list, int, int]:
    """Argument list and launch geometry of the int8dot GEMV; shape is (N, K, M)."""
    n_out, k, m = shape
    args = api._arg_values(dev, ks, qt.arrays(), {"y": y_buf, "xq": xq_buf}, {"N": n_out, "K": k, "M": m})
    return args, -(-n_out // ks.per_item) * ks.wg, ks.wg


def _quantize_launch(dev, x: Any, m: int, k: int, dtype: str, like: Any) -> tuple[Any, Any, int]:
    """Quantize x [m, k] to q8_1 on dev: (launch argument, array, bytes) of the q8_1 blocks."""
    ks, kernel, nblocks = prepare_quantize(dev, m, k, dtype)
    nbytes = nblocks * _act().block_bytes
    # The blocks live in a buffer of 2-byte elements: every backend allocates f16 (36-byte blocks).
    xq_buf, xq = dev.empty(nbytes // 2, "f16", like=like, poison=api.POISON_OUTPUTS)
    dev.launch(kernel, *launch_quantize(dev, ks, x, xq_buf, nblocks))
    return xq_buf, xq, nbytes


def _byte_view(arr: Any) -> Any:
    """A device array of 2-byte elements viewed as bytes, where its type can (torch, pyopencl,
    pycuda); otherwise the array as it is."""
    if hasattr(arr, "detach"):
        import torch

        return arr.view(torch.uint8)
    view = getattr(arr, "view", None)
    try:
        return view(np.uint8) if view is not None else arr
    except Exception:
        return arr


def quantize_q8_1_device(x: Any, backend: str | None = None, device: int | str | None = None):
    """q8_1 blocks of x [M, K] (or [K]; K a multiple of 32), quantized on the device: the bytes
    reference.quantize(x as f32, "q8_1").data holds. numpy x (bf16 as uint16 bits) -> a numpy uint8
    array of M*K/32*36 bytes; a device array -> the backend's array (bytes where its type can view)."""
    from .backends import open_device

    shape = api._shape_of(x)
    if len(shape) == 1:
        shape = (1, shape[0])
    if len(shape) != 2 or shape[0] < 1 or shape[1] < 1:
        raise QKGenValueError(f"x.shape: {api._shape_of(x)}; allowed: [M, K] or [K]")
    m, k = shape
    _check_k(k, "q8_1 blocks")
    dtype = api.x_dtype(x)
    dev = open_device(backend, device)
    native = dev.is_native(x)
    _, xq, nbytes = _quantize_launch(dev, x, m, k, dtype, x if native else None)
    if native:
        return _byte_view(xq)
    return dev.download(xq, "f16", nbytes // 2).view(np.uint8)


def gemv_int8dot(qt: QTensor, x: Any, backend: str | None = None, device: int | str | None = None):
    """y = x @ W.T through q8_1 activations and int8 dot products (api.gemv(path="int8dot")).

    qt: a GGUF weight [N, K] (q4_0, q4_1, q5_0, q5_1, q8_0); x [M, K] or [K], M <= 8, f32/f16/bf16.
    y is [M, N] in x's dtype; the backend's array type when x is one, numpy when x is numpy."""
    from .backends import open_device

    if isinstance(qt, QTensor) and qt.format.name not in INT8DOT_FORMATS:
        raise QKGenValueError(f"qtensor.format: {qt.format.name} has no int8dot path; allowed: "
                              f"{', '.join(INT8DOT_FORMATS)}")  # fmt: skip
    n_out, k, m, dtype = api.gemv_inputs(qt, x)
    _check_k(k, f"the int8dot path ({qt.describe()})")
    dev = open_device(backend, device)
    native = dev.is_native(x)
    like = x if native else None
    xq_buf, _xq, _ = _quantize_launch(dev, x, m, k, dtype, like)
    ks, kernel = prepare_gemv_int8dot(dev, qt, m, dtype)
    y_buf, y = dev.empty(m * n_out, dtype, like=like, poison=api.POISON_OUTPUTS)
    dev.launch(kernel, *launch_gemv_int8dot(dev, ks, qt, xq_buf, y_buf, (n_out, k, m)))
    if native:
        return y.reshape(m, n_out)
    return dev.download(y, dtype, m * n_out).reshape(m, n_out)
