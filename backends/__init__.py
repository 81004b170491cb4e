"""Device backends: one module per runtime, plus selection.

select() picks the backend explicitly named, else $QKGEN_BACKEND, else the first available in
PREFERENCE. Backend modules import their runtime lazily, so listing and probing never fails.
"""

from __future__ import annotations

import importlib
import os

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
    if not name and os.environ.get("QKGEN_BACKEND"):
        name, src = os.environ["QKGEN_BACKEND"], " (from QKGEN_BACKEND)"
    if name:
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


_open: dict[tuple, object] = {}


def open_device(backend: str | None = None, device: int | str | None = None):
    """An opened device, kept for reuse (contexts and compiled kernels are per device)."""
    b = select(backend)
    key = (b.name, device)
    if key not in _open:
        _open[key] = b.open(device)
    return _open[key]
