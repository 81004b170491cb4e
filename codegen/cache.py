"""qkgen's cache folder: compiled kernels, the SYCL helper, the OpenCL vendors folder.

QKGEN_CACHE_DIR wins; then $XDG_CACHE_HOME/qkgen; then ~/.cache/qkgen. (CI sets QKGEN_CACHE_DIR
through the Makefile so that nothing lands in $HOME.)

Every entry is written atomically (a temp file in the same folder, fsync, rename; the temp is
removed on any failure) and carries a digest of its key and payload that is checked before use,
so a damaged, truncated or swapped entry is deleted and rebuilt instead of reaching a driver.
Entries read through `load_entry` hold the digest in a one-line header; files that a loader must
open by path (the SYCL helper .so) keep it in a `<name>.sha256` sidecar (`store_file`,
`verify_file`).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path

_MAGIC = b"qkgen-cache-1 "  # header: magic, 64 hex digits of sha256(key \0 payload), newline
_HEADER_LEN = len(_MAGIC) + 64 + 1
_SIDECAR = ".sha256"
_private: Path | None = None  # the per-process fallback folder, once one was needed


def cache_root() -> Path:
    """The cache folder (it may not exist yet)."""
    if os.environ.get("QKGEN_CACHE_DIR"):
        return Path(os.environ["QKGEN_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "qkgen"


def cache_dir(*sub: str) -> Path:
    return cache_root().joinpath(*sub)


def inside_cache(path: Path) -> bool:
    """Whether `path` (resolved, symlinks followed) lies inside the cache folder."""
    try:
        Path(path).resolve().relative_to(cache_root().resolve())
        return True
    except (ValueError, OSError):
        return False


def writable_dir(*sub: str) -> tuple[Path, str | None]:
    """(folder, note): cache_dir(*sub), created; or, when the cache folder cannot be written, a
    private temp folder for this process and a note naming QKGEN_CACHE_DIR (also a warning).
    Callers whose files must exist (loader folders, the SYCL helper) use this, so an unusable
    cache folder never silently changes what runs."""
    folder = cache_dir(*sub)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".probe.", delete=True)
        probe.close()
        return folder, None
    except OSError as e:
        why = e
    fallback = _private_dir().joinpath(*sub)
    fallback.mkdir(parents=True, exist_ok=True)
    source = "QKGEN_CACHE_DIR" if os.environ.get("QKGEN_CACHE_DIR") else "the qkgen cache folder"
    note = (f"{source} ({cache_root()}) cannot be written ({type(why).__name__}: {why}); "
            f"using the private folder {fallback} for this process")  # fmt: skip
    warnings.warn(note, RuntimeWarning, stacklevel=2)
    return fallback, note


def _private_dir() -> Path:
    global _private
    if _private is None:
        _private = Path(tempfile.mkdtemp(prefix="qkgen-cache-"))
        atexit.register(shutil.rmtree, _private, True)
    return _private


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that a concurrent reader sees the old file or the whole new one. Raises
    OSError; nothing is left behind on failure."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def digest(key: str, payload: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\0" + payload).hexdigest()


def discard(path: Path) -> None:
    """Delete a cache entry (and its sidecar); never raises."""
    for p in (Path(path), Path(str(path) + _SIDECAR)):
        try:
            p.unlink(missing_ok=True)
        except OSError:
            pass


def store_entry(path: Path, payload: bytes, key: str) -> bool:
    """Store `payload` under `path` with its digest. False when the cache cannot be written (a
    read-only cache costs a rebuild, not a failure)."""
    try:
        write_atomic(path, _MAGIC + digest(key, payload).encode() + b"\n" + payload)
        return True
    except OSError:
        return False


def load_entry(path: Path, key: str) -> bytes | None:
    """The payload stored under `path` for `key`, or None. A damaged entry (bad header, digest
    mismatch: truncated, flipped, another key's) is deleted."""
    path = Path(path)
    if not inside_cache(path):
        return None
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    header, payload = blob[:_HEADER_LEN], blob[_HEADER_LEN:]
    stored = header[len(_MAGIC) : -1].decode("ascii", "replace")
    if header[: len(_MAGIC)] != _MAGIC or header[-1:] != b"\n" or stored != digest(key, payload):
        discard(path)
        return None
    return payload


def store_file(path: Path, key: str) -> None:
    """Record the digest of an existing file (written atomically by its producer) beside it."""
    path = Path(path)
    write_atomic(Path(str(path) + _SIDECAR), digest(key, path.read_bytes()).encode())


def verify_file(path: Path, key: str) -> bool:
    """Whether `path` exists and matches the digest beside it; a mismatch deletes both."""
    path = Path(path)
    try:
        want = Path(str(path) + _SIDECAR).read_text(encoding="ascii", errors="replace").strip()
        ok = want == digest(key, path.read_bytes())
    except OSError:
        ok = False
    if not ok:
        discard(path)
    return ok


def cache_info() -> dict:
    """Where the cache is, how many files it holds and their bytes."""
    root = cache_root()
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for n in names:
            try:
                size += os.lstat(os.path.join(dirpath, n)).st_size
                files += 1
            except OSError:
                pass
    return {"path": str(root), "files": files, "bytes": size}


def clear_cache() -> int:
    """Delete every file in the cache folder; returns how many were deleted."""
    root = cache_root()
    removed = 0
    if not root.is_dir():
        return 0
    for dirpath, dirs, names in os.walk(root, topdown=False):
        for n in names:
            try:
                os.unlink(os.path.join(dirpath, n))
                removed += 1
            except OSError:
                pass
        for d in dirs:
            p = os.path.join(dirpath, d)
            try:
                if os.path.islink(p):
                    os.unlink(p)
                else:
                    os.rmdir(p)
            except OSError:
                pass
    return removed
