"""embedding(qt, ids): the rows of a quantized table named by token ids, on a device.

The rows are bit-equal to the same rows of qkgen.dequantize(qt): the embedding kernel family
decodes each chunk with dequantize's rules. Used for GGUF token_embd (qkgen.torch.QuantEmbedding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import QKGenValueError
from ..runtime.api import dtype_name, weight_values
from ..runtime.plan import Plan


def _check(qt, ids) -> tuple[int, int, int]:
    from ..formats import QTensor, validate

    if not isinstance(qt, QTensor):
        raise QKGenValueError(f"qtensor: expected a QTensor, got {type(qt).__name__}")
    validate(qt)
    if len(qt.shape) != 2:
        raise QKGenValueError(f"qtensor.shape: {qt.shape}; allowed: a 2-D table [rows, K]")
    shape = tuple(int(s) for s in getattr(ids, "shape", (-1, -1)))
    dt = str(getattr(ids, "dtype", "")).replace("torch.", "")
    if len(shape) != 1 or shape[0] < 1 or dt != "uint32":
        raise QKGenValueError(f"ids: {type(ids).__name__} {dt} {list(shape)}; allowed: a non-empty 1-D uint32 array "
                              "(numpy or the device's own array type)")  # fmt: skip
    rows, k = qt.shape
    if isinstance(ids, np.ndarray) and ids.max() >= rows:
        raise QKGenValueError(f"ids: {int(ids.max())} is past the table's last row; allowed: 0..{rows - 1}")
    return shape[0], rows, k


def _plan(dev, qt, dtype: str, k: int) -> Plan:
    """The embedding plan with the widest chunk that divides K (a chunk never straddles rows)."""
    kw = dict(dtype=dtype, blocksize=qt.blocksize, nested=qt.nested, scale_mode=qt.scale_mode)
    plan = Plan.make(dev, "embedding", qt.format, **kw)
    ept = plan.ks.param("ept")
    while k % ept:
        ept //= 2
        try:
            plan = Plan.make(dev, "embedding", qt.format, ept=ept, **kw)
        except QKGenValueError:
            if ept <= 1:
                raise QKGenValueError(f"qtensor.shape: K={k} holds no whole number of {qt.describe()} chunks; "
                                      "allowed: K a multiple of 32") from None  # fmt: skip
    return plan


def embedding_plan(qt, ids, dtype: Any = "f32", backend: str | None = None, device: Any = None):
    """(plan, launch sizes) of embedding(qt, ids, ...), after validating everything."""
    from ..backends import open_device

    t, rows, k = _check(qt, ids)
    dev = open_device(backend, device)
    plan = _plan(dev, qt, dtype_name(dtype), k)
    _, sizes = weight_values(qt)
    sizes.update(T=t, cols=k, rows=rows, groups_per_row=qt.groups_per_row)
    return plan, sizes


def embedding(qt, ids, dtype: Any = "f32", backend: str | None = None, device: Any = None):
    """out[t] = dequantize(qt)[ids[t]] for a table qt [rows, K] and uint32 ids [T]: [T, K] in dtype,
    the backend's array type when ids is one (no copies), numpy when ids is numpy (bf16 as uint16
    bits). An id past the last row gives a row of NaN on device arrays (numpy ids are checked)."""
    plan, sizes = embedding_plan(qt, ids, dtype, backend, device)
    dev = plan.dev
    native = dev.is_native(ids)
    arrays, _ = weight_values(qt)
    (buf, arr, dt), = plan.outputs(sizes, like=ids if native else None).values()
    plan.launch({**arrays, "ids": ids, "out": buf}, sizes)
    shape = (sizes["T"], sizes["cols"])
    return arr.reshape(shape) if native else dev.download(arr, dt, sizes["T"] * sizes["cols"]).reshape(shape)
