"""A QTensor's arrays on a device and back: what QTensor.to() / to_host() do.

Each backend's own array type is made here (the backends upload to raw buffers, which the API
would not recognise as device arrays): pyopencl Arrays on the device's context and queue, SYCL
USM memory as USMArray, and on CUDA torch tensors when torch is loaded (else pycuda GPUArrays).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import QKGenValueError


def host_copy(a: Any, name: str) -> np.ndarray:
    """A C-contiguous numpy copy (or view) of an array on the host or a device."""
    if isinstance(a, np.ndarray):
        return np.ascontiguousarray(a)
    if type(a).__module__.startswith("torch"):
        t = a.detach().cpu().contiguous()
        import torch

        return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()
    for attr in ("to_host", "get"):  # USMArray, pyopencl / pycuda arrays
        if hasattr(a, attr):
            return np.asarray(getattr(a, attr)())
    raise QKGenValueError(f"{name}: {type(a).__module__}.{type(a).__name__} cannot be copied to the host; "
                          "allowed: numpy arrays, torch tensors or qkgen device arrays")  # fmt: skip


def to_device(host: np.ndarray, dev) -> Any:
    """A native array of `dev` holding a copy of `host`."""
    host = np.ascontiguousarray(host)
    if dev.backend == "opencl":
        import pyopencl.array as cla

        return cla.to_device(dev.queue, host)
    if dev.backend == "sycl":
        from ..backends.sycl_usm import USMArray

        buf, arr = dev.empty(max(host.size, 1), dtypes.of_host(host.dtype))
        if host.nbytes:
            dev.queue.memcpy(buf, host, host.nbytes)
        return USMArray(buf, host.dtype, host.shape)
    if dev.backend == "cuda":
        if "torch" in sys.modules:
            import torch

            return torch.from_numpy(host).to(f"cuda:{dev.info.index}")
        import pycuda.gpuarray as gpuarray

        return gpuarray.to_gpu(host)
    raise QKGenValueError(f"backend: {dev.backend!r} cannot hold QTensor arrays; allowed: cuda, sycl, opencl")


def move(arrays: dict[str, Any], backend: str | None, device: Any) -> dict[str, Any]:
    """The same arrays (by name) copied onto the opened device."""
    from ..backends import open_device

    dev = open_device(backend, device)
    return {k: to_device(host_copy(v, k), dev) for k, v in arrays.items()}


def to_host(arrays: dict[str, Any]) -> dict[str, Any]:
    return {k: host_copy(v, k) for k, v in arrays.items()}
