"""Device backends: one module per runtime, plus selection.

select() picks the backend explicitly named, else $QKGEN_BACKEND, else the first available in
PREFERENCE. Backend modules import their runtime lazily, so listing and probing never fails.
"""

from __future__ import annotations

import importlib
import os
import threading

import numpy as np

from ..errors import BackendUnavailable, QKGenValueError

# Preferred order when nothing is named: native CUDA, then SYCL (Intel GPUs), then OpenCL.
PREFERENCE = ("cuda", "sycl", "opencl")
_MODULES = {"cuda": "cuda", "sycl": "sycl", "opencl": "opencl"}


def get(name: str):
    """The backend object called `name` (not yet probed)."""
    if name not in _MODULES:
        raise QKGenValueError(f"backend: unknown backend {name!r}; allowed: {', '.join(_MODULES)}")
    return importlib.import_module(f".{_MODULES[name]}", __name__).BACKEND


def available() -> dict[str, str | None]:
    """Every backend with None if usable, else the reason it is not. Never raises."""
    out = {}
    for name in PREFERENCE:
        try:
            out[name] = get(name).why_unavailable()
        except Exception as e:  # an import-time failure of a backend module is a reason too
            out[name] = f"{type(e).__name__}: {e}"
    return out


def select(name: str | None = None):
    """The backend to use: `name`, else $QKGEN_BACKEND, else the first available one."""
    src = ""
    if name is None and os.environ.get("QKGEN_BACKEND"):
        name, src = os.environ["QKGEN_BACKEND"], " (from QKGEN_BACKEND)"
    if name is not None:
        if not isinstance(name, str) or not name:
            raise QKGenValueError(f"backend: {name!r}{src}; allowed: None or one of {', '.join(_MODULES)}")
        try:
            backend = get(name)
        except ImportError as e:
            raise BackendUnavailable(f"backend {name!r}{src} cannot be used: {e}") from None
        why = backend.why_unavailable()
        if why:
            raise BackendUnavailable(f"backend {name!r}{src} cannot be used: {why}")
        return backend
    reasons = available()
    for n in PREFERENCE:
        if reasons[n] is None:
            return get(n)
    detail = "; ".join(f"{n}: {why}" for n, why in reasons.items())
    raise BackendUnavailable(f"no backend is usable ({detail})")


# One Device per physical device (keyed by the resolved DeviceInfo index, not by how the caller
# spelled it), and one per user context/queue handed in: contexts, queues and compiled kernels
# are per Device, and an array made through one is accepted by every call that names the device.
_open: dict[tuple, object] = {}
_open_lock = threading.Lock()


def open_device(backend: str | None = None, device=None):
    """The opened device: `device` is None (the preferred one), an index, a name substring, or
    a runtime object of the user's that names one (a pyopencl Context or CommandQueue, a dpctl
    SyclQueue), whose context is then used as it is."""
    b = select(backend)
    with _open_lock:
        if device is not None and not isinstance(device, (str, int, np.integer)):
            adopted = b.adopt(device)
            if adopted is None:
                kind = f"{type(device).__module__}.{type(device).__name__}"
                raise QKGenValueError(f"device: {kind} is not usable on {b.name}; allowed: None, an index, "
                                      f"a name substring{_ADOPTABLE.get(b.name, '')}")  # fmt: skip
            key, dev = adopted
            return _open.setdefault((b.name, "user", *key), dev)
        info = b.resolve(device)
        key = (b.name, info.index)
        if key not in _open:
            _open[key] = b.open(info.index)
        return _open[key]


_ADOPTABLE = {"opencl": ", a pyopencl Context or CommandQueue", "sycl": ", a dpctl SyclQueue"}
