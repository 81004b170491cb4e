"""The torch.library custom ops qkgen's modules call: qkgen::linear and qkgen::embedding.

Each op names its weight by an integer handle (the QuantWeight registry), so torch.compile sees
an opaque op with a fake (meta) implementation giving the output's shape and dtype, and
fullgraph=True captures it without graph breaks.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import QKGenValueError
from ..kernels.ops import MAX_M
from . import place
from .weights import REGISTRY


def weight(handle: int):
    w = REGISTRY.get(handle)
    if w is None:
        raise QKGenValueError(f"handle: {handle} names no live qkgen weight; allowed: a QuantLinear's or "
                              "QuantEmbedding's own handle")  # fmt: skip
    return w


@torch.library.custom_op("qkgen::linear", mutates_args=())
def linear(x: torch.Tensor, handle: int, n_out: int) -> torch.Tensor:
    """y = x @ W.T for x [..., K]: M <= 8 rows through the GEMV kernels, more rows through the
    dequantized weight (cached) and torch.matmul. y in x's dtype, on x's device."""
    from ..runtime.api import gemv

    w = weight(handle)
    k = w.qt.shape[1]
    place.check_x(x, k)
    lead = x.shape[:-1]
    x2 = x.reshape(-1, k)
    m = x2.shape[0]
    if m == 0:
        return x.new_empty((*lead, n_out))
    if m > MAX_M:
        return torch.matmul(x2, w.dequantized(x, x.dtype).T).reshape(*lead, n_out)
    qt, backend, index = w.on(x)
    if x.device.type == "cpu":
        y = place.from_host(gemv(qt, place.to_host(x2), backend=backend, device=index), x.dtype)
    else:
        y = gemv(qt, x2.contiguous(), backend=backend, device=index)
    return y.reshape(*lead, n_out)


@linear.register_fake
def _(x, handle, n_out):
    return x.new_empty((*x.shape[:-1], n_out))


@torch.library.custom_op("qkgen::embedding", mutates_args=())
def embedding(ids: torch.Tensor, handle: int, dtype: torch.dtype) -> torch.Tensor:
    """Rows of the table for integer ids [...] -> [..., D] in dtype, on ids' device."""
    from ..interop.lookup import embedding as lookup

    w = weight(handle)
    rows, dim = w.qt.shape
    check_ids(ids, rows)
    flat = ids.reshape(-1)
    if flat.numel() == 0:
        return torch.empty((*ids.shape, dim), dtype=dtype, device=ids.device)
    name = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    qt, backend, index = w.on(ids)
    if ids.device.type == "cpu":
        host = flat.numpy().astype(np.uint32)
        out = place.from_host(lookup(qt, host, name, backend=backend, device=index), dtype)
    else:
        out = lookup(qt, flat.to(torch.int32).view(torch.uint32), name, backend=backend, device=index)
    return out.reshape(*ids.shape, dim)


@embedding.register_fake
def _(ids, handle, dtype):
    return torch.empty((*ids.shape, weight(handle).qt.shape[1]), dtype=dtype, device=ids.device)


def check_ids(ids, rows: int, values: bool = True) -> None:
    """Type and dtype; with values (in the op, never while tracing), the range on the host."""
    if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32, torch.uint8, torch.int16):
        raise QKGenValueError(f"ids: {getattr(ids, 'dtype', type(ids).__name__)}; allowed: an integer torch.Tensor "
                              "(int64 or int32)")  # fmt: skip
    if values and ids.device.type == "cpu" and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= rows):
        raise QKGenValueError(f"ids: values in {int(ids.min())}..{int(ids.max())}; allowed: 0..{rows - 1}")
