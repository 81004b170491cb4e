"""qkgen's cache folder: compiled kernels, the SYCL helper, the OpenCL vendors folder.

QKGEN_CACHE_DIR wins; then $XDG_CACHE_HOME/qkgen; then ~/.cache/qkgen. (CI sets QKGEN_CACHE_DIR
through the Makefile so that nothing lands in $HOME.)
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*sub: str) -> Path:
    if os.environ.get("QKGEN_CACHE_DIR"):
        base = Path(os.environ["QKGEN_CACHE_DIR"])
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "qkgen"
    return base.joinpath(*sub)


def write_atomic(path: Path, data: bytes) -> None:
    """Write a cache file so that a concurrent reader sees the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
