"""A quantized weight as the torch modules use it: one QTensor, placed once per device, and a
bounded cache of dequantized copies for the many-rows path.

The cache: M > 8 rows go through torch.matmul with the weight dequantized once (until a native
GEMM exists). Dequantized copies are kept in one process-wide LRU of at most CACHE_BYTES bytes
(QKGEN_TORCH_CACHE_MB, default 1024 MiB); the least recently used copies are dropped first, and a
weight larger than the whole budget is dequantized per call and not kept.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections import OrderedDict

import torch

from ..formats import QTensor
from ..interop.device import host_copy
from . import place

CACHE_BYTES = int(float(os.environ.get("QKGEN_TORCH_CACHE_MB", "1024")) * 2**20)
_cache: OrderedDict = OrderedDict()  # (weight id, backend, device, dtype) -> tensor
_cache_lock = threading.Lock()
_used = [0]
_ids = itertools.count(1)
REGISTRY: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # handle -> QuantWeight


def dequant_cache_info() -> dict:
    """{"bytes": held, "entries": count, "limit": CACHE_BYTES}."""
    with _cache_lock:
        return {"bytes": _used[0], "entries": len(_cache), "limit": CACHE_BYTES}


def _drop(key) -> None:
    t = _cache.pop(key, None)
    if t is not None:
        _used[0] -= t.numel() * t.element_size()


class QuantWeight:
    """A QTensor plus its device copies; `handle` names it to the custom ops."""

    def __init__(self, qt: QTensor, backend: str | None = None, device=None):
        self.qt = qt
        self.backend, self.device = backend, device  # for CPU tensors: which OpenCL/SYCL device
        self._placed: dict = {}
        self._lock = threading.Lock()
        self.handle = next(_ids)
        REGISTRY[self.handle] = self
        weakref.finalize(self, _forget, self.handle)

    def on(self, t: torch.Tensor) -> tuple[QTensor, str, int]:
        """(the QTensor on t's device, backend, device index), uploading it the first time."""
        backend, index = place.placement(t, self.backend, self.device)
        with self._lock:
            qt = self._placed.get((backend, index))
            if qt is None:
                qt = self._placed[(backend, index)] = self.qt.to(backend, index)
        return qt, backend, index

    def dequantized(self, t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The weight [N, K] dequantized on t's device in dtype, from the cache when it is there."""
        from ..runtime.api import dequantize

        qt, backend, index = self.on(t)
        key = (self.handle, backend, index, dtype)
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
                return hit
        name = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
        w = dequantize(qt, name, backend=backend, device=index)
        if isinstance(w, torch.Tensor):
            w = w.reshape(qt.shape)
        else:  # a CPU device's own array (pyopencl / USM): one copy into a torch tensor
            w = place.from_host(host_copy(w, "weight").reshape(qt.shape), dtype)
        if t.device.type != "cpu":
            w = w.to(t.device)
        nbytes = w.numel() * w.element_size()
        if nbytes <= CACHE_BYTES:
            with _cache_lock:
                while _cache and _used[0] + nbytes > CACHE_BYTES:
                    _drop(next(iter(_cache)))
                _cache[key] = w
                _used[0] += nbytes
        return w


def _forget(handle: int) -> None:
    with _cache_lock:
        for key in [k for k in _cache if k[0] == handle]:
            _drop(key)
