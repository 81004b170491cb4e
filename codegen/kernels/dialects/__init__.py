"""Dialects: everything that differs between CUDA, SYCL and OpenCL C, held as data.

One module per backend (named after it, exporting DIALECT); base.py holds the C subset the
templates are written in and the defaults. A new backend's dialect is one file here.
"""

from __future__ import annotations

import importlib

from ..target import BACKENDS, Target, get_target
from .base import Dialect

DIALECTS: dict[str, type[Dialect]] = {b: importlib.import_module(f"{__name__}.{b}").DIALECT for b in BACKENDS}


def dialect_class(backend: str) -> type[Dialect]:
    from ...errors import QKGenValueError

    try:
        return DIALECTS[backend]
    except (KeyError, TypeError):
        raise QKGenValueError(f"backend: unknown backend {backend!r}; allowed: {', '.join(DIALECTS)}") from None


def dialect(target: Target | str) -> Dialect:
    """The dialect of a target's backend, rendering for that target (a Target, profile or backend name)."""
    t = get_target(target)
    return dialect_class(t.backend)(t)


__all__ = ["DIALECTS", "Dialect", "dialect", "dialect_class"]
