"""Compile SYCL C++ at run time (DPC++ kernel_compiler) and launch it on a dpctl queue.

The C++ side is ``sycl_helper.cpp``: host-only code compiled here on first use
with the system C++ compiler against the SYCL headers/libsycl.so shipped by the
``intel-sycl-rt`` wheel (no DPC++ compiler needed; the device compiler is
libsycl-jit.so, used by the runtime itself). The resulting .so is cached and
loaded with ctypes. Only stdlib + ctypes here; dpctl is never imported: a
queue is anything with ``addressof_ref()`` (dpctl.SyclQueue) or a raw int.

Compiled kernel bundles are cached on disk as SYCLBIN (see ``Program``) so a
second process skips the ~2 s SYCL->SPIR-V->native compile.

The Intel CPU OpenCL device must already be visible (``icd.register_runtimes()``
before dpctl's first device query) for an ``opencl:cpu`` queue.
"""

from __future__ import annotations

import ctypes as C
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ..cache import cache_dir, discard, load_entry, store_entry, store_file, verify_file, writable_dir
from ..errors import BuildError, QKGenError

__all__ = ["SyclError", "SyclBuildError", "Program", "Kernel",
           "Event", "can_build", "load_helper", "check_toolchain", "identity"]  # launches: sycl_launch.py

_HELPER_SRC = Path(__file__).with_name("sycl_helper.cpp")
_ABI = 4  # must match qk_abi_version() in sycl_helper.cpp
ARG_VALUE, ARG_USM, ARG_LOCAL = 0, 1, 2  # QK_ARG_* in sycl_helper.cpp
# intel-sycl-rt 2026.2.0: building source that uses these segfaults the
# process inside syclex::build (ProgramManager::cacheKernelImplicitLocalArg),
# so refuse them up front; use a work_group_memory parameter (LocalMem).
_CRASHY_SOURCE = ("get_work_group_scratch_memory", "group_local_memory")


class SyclError(QKGenError, RuntimeError):
    """A SYCL runtime call failed (message from the C++ exception)."""


class SyclBuildError(BuildError, SyclError):
    """Run-time compilation failed; the message has the build log and numbered source."""


# --------------------------------------------------------------------------
# Locating the SYCL runtime and building the helper

_LIBSYCL = re.compile(r"libsycl\.so(\.\d+)*")  # not -preview, not gdb scripts


def _find_sycl() -> tuple[Path, Path, str]:
    """(include dir holding sycl/sycl.hpp, libsycl.so path, runtime version)."""
    try:
        dist = md.distribution("intel-sycl-rt")
        version = dist.version
    except md.PackageNotFoundError:
        dist, version = None, "unknown"
    # The wheel installs into the environment root (include/, lib/), which is
    # sys.prefix for a venv; ask the wheel's RECORD when that is not so.
    cands = [(Path(sys.prefix) / "include", Path(sys.prefix) / "lib")]
    if dist is not None:
        inc = lib = None
        for f in dist.files or ():
            s = str(f).replace("\\", "/")
            if s.endswith("include/sycl/sycl.hpp"):
                inc = Path(dist.locate_file(f)).resolve().parent.parent
            elif _LIBSYCL.fullmatch(Path(s).name):
                lib = Path(dist.locate_file(f)).resolve().parent
        if inc and lib:
            cands.append((inc, lib))
    for inc, libdir in cands:
        if not (inc / "sycl" / "sycl.hpp").is_file():
            continue
        # Prefer the dev symlink; wheels without it still have libsycl.so.N.
        libs = sorted((p for p in libdir.glob("libsycl.so*")
                       if _LIBSYCL.fullmatch(p.name)), key=lambda p: len(p.name))
        if libs:
            return inc, libs[0], version
    raise SyclError("SYCL headers/libsycl.so not found (is intel-sycl-rt installed?)")


def _compiler() -> str:
    for cxx in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if cxx and shutil.which(cxx):
            return cxx
    raise SyclError("no C++ compiler for the SYCL helper (set CXX)")


def check_toolchain() -> None:
    """Raise SyclError if the helper cannot be built here (no SYCL headers or
    libsycl.so, no C++ compiler). Cheap: finds files, compiles nothing."""
    _find_sycl()
    _compiler()


def _build_helper() -> tuple[Path, str]:
    """(path of the helper .so, its cache key): the cached build if its digest matches, else a
    fresh build (a truncated or emptied .so is never handed to dlopen: it would SIGBUS)."""
    inc, libsycl, rt_version = _find_sycl()
    cxx = _compiler()
    cxx_version = subprocess.run([cxx, "--version"], capture_output=True,
                                 text=True).stdout
    src = _HELPER_SRC.read_bytes()
    key = hashlib.sha256(b"\0".join([
        src, cxx_version.encode(), rt_version.encode(),
        str(libsycl.resolve()).encode(), str(inc).encode()])).hexdigest()[:16]
    folder, _ = writable_dir("sycl_helper")  # a private folder if the cache cannot be written
    out = folder / f"sycl_helper-{key}.so"
    if verify_file(out, key):
        return out, key
    # Compile to a temp name and rename: concurrent processes may race here.
    fd, tmp = tempfile.mkstemp(prefix=".sycl_helper-", suffix=".so.tmp", dir=folder)
    os.close(fd)
    cmd = [cxx, "-std=c++17", "-O2", "-fPIC", "-shared",
           "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING", f"-I{inc}",
           str(_HELPER_SRC), "-o", tmp, str(libsycl),
           f"-Wl,-rpath,{libsycl.parent}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SyclError(f"building the SYCL helper failed:\n{' '.join(cmd)}\n{r.stderr}")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
        store_file(out, key)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return out, key


_lib = None
_lib_lock = threading.Lock()


def _open_helper() -> C.CDLL:
    """dlopen the helper; one that fails to load or has another ABI is deleted and rebuilt once."""
    for attempt in (1, 2):
        path, key = _build_helper()
        try:
            lib = C.CDLL(str(path))
            if lib.qk_abi_version() == _ABI:
                return lib
            why = "stale sycl_helper build (ABI mismatch)"
        except OSError as e:
            why = f"loading the SYCL helper {path} failed: {e}"
        discard(path)
    raise SyclError(why)


def load_helper() -> C.CDLL:
    """Build (once, cached on disk) and load the helper library."""
    global _lib
    with _lib_lock:
        if _lib is None:
            lib = _open_helper()
            vp, pp, i, sz = C.c_void_p, C.POINTER(C.c_void_p), C.c_int, C.c_size_t
            sigs = {
                "qk_free": (None, [vp]),
                "qk_device_desc": (i, [vp, pp, pp]),
                "qk_can_build_sycl": (i, [vp, C.POINTER(i), pp]),
                "qk_build": (i, [vp, C.c_char_p, C.POINTER(C.c_char_p), i, pp, pp, pp]),
                "qk_bundle_save": (i, [vp, pp, C.POINTER(sz), pp]),
                "qk_bundle_load": (i, [vp, C.c_char_p, sz, pp, pp]),
                "qk_bundle_release": (None, [vp]),
                "qk_get_kernel": (i, [vp, C.c_char_p, pp, pp]),
                "qk_kernel_release": (None, [vp]),
                "qk_kernel_info": (i, [vp, vp, C.POINTER(C.c_uint64), pp]),
                "qk_launch": (i, [vp, vp, i, pp, C.POINTER(sz), C.POINTER(i),
                                  i, C.POINTER(sz), C.POINTER(sz), sz, pp, pp]),
                "qk_event_wait": (i, [vp, pp]),
                "qk_event_profile": (i, [vp, C.POINTER(C.c_uint64),
                                         C.POINTER(C.c_uint64), pp]),
                "qk_event_release": (None, [vp]),
                "qk_queue_wait": (i, [vp, pp]),
            }
            for name, (res, args) in sigs.items():
                fn = getattr(lib, name)
                fn.restype, fn.argtypes = res, args
            _lib = lib
    return _lib


# --------------------------------------------------------------------------
# Small helpers around the C ABI

def _take_str(lib, p: C.c_void_p) -> str:
    """Copy a malloc'd C string into Python and free it."""
    if not p.value:
        return ""
    try:
        return C.string_at(p).decode(errors="replace")
    finally:
        lib.qk_free(p)


def _check(lib, rc: int, err: C.c_void_p, what: str):
    if rc != 0:
        raise SyclError(f"{what}: {_take_str(lib, err)}")


def _queue_ref(queue) -> int:
    # dpctl: addressof_ref() is the DPCTLSyclQueueRef, i.e. a sycl::queue*.
    return queue if isinstance(queue, int) else queue.addressof_ref()


# --------------------------------------------------------------------------
# Public API

def identity(queue) -> list[str]:
    """What a compiled bundle depends on besides source and options: helper
    ABI, SYCL runtime version, device backend|vendor|name|driver. Part of
    every bundle cache key."""
    lib, out, err = load_helper(), C.c_void_p(), C.c_void_p()
    _check(lib, lib.qk_device_desc(C.c_void_p(_queue_ref(queue)), C.byref(out),
                                   C.byref(err)), err, "device query")
    try:
        rt = md.version("intel-sycl-rt")
    except md.PackageNotFoundError:
        rt = "unknown"
    return [f"abi{_ABI}", rt, _take_str(lib, out)]


def can_build(queue) -> bool:
    """Whether the queue's device accepts SYCL source (kernel_compiler)."""
    lib, ok, err = load_helper(), C.c_int(), C.c_void_p()
    _check(lib, lib.qk_can_build_sycl(C.c_void_p(_queue_ref(queue)), C.byref(ok),
                                      C.byref(err)), err, "can_build")
    return bool(ok.value)


class Program:
    """An executable kernel bundle built from SYCL C++ ``source`` for ``queue``'s device.

    With ``cache=True`` the bundle is stored as SYCLBIN under
    ``cache_dir()/sycl_bundles`` keyed by source, options, device/driver and
    runtime, and later Programs (in any process) load it instead of compiling.
    ``cache`` may also be the cache file's path, for callers that key their
    own caches (qkgen's backend: Device.disk_key). ``from_cache`` tells which.
    """

    def __init__(self, queue, source: str, options=(), cache: bool | str | os.PathLike = True,
                 name: str = "program"):
        self._setup(queue, source, options, name)
        if isinstance(cache, bool):
            path = self._cache_path() if cache else None
        else:
            path = Path(cache)
        if path is not None and self._load(path):
            return
        self._build(C.c_void_p(_queue_ref(queue)))
        if path is not None:  # keyed by the file name: another kernel's bundle never matches
            store_entry(path, self.to_bytes(), path.name)

    @classmethod
    def load(cls, queue, path, name: str = "program") -> Program | None:
        """The bundle stored at ``path`` by an earlier Program, or None if it
        is missing or unusable (no source to rebuild from)."""
        prg = cls.__new__(cls)
        prg._setup(queue, "", (), name)
        return prg if prg._load(Path(path)) else None

    def _setup(self, queue, source: str, options, name: str):
        self._lib = load_helper()
        self.queue = queue  # keep the queue (and its sycl::queue) alive
        self.source, self.options, self.name = source, list(options), name
        self.build_log = ""
        self.from_cache = False
        self._h = C.c_void_p()

    def _load(self, path: Path) -> bool:
        data = load_entry(path, path.name)  # None if missing or damaged (then deleted)
        if data is None:
            return False
        lib, err = self._lib, C.c_void_p()
        q = C.c_void_p(_queue_ref(self.queue))
        if lib.qk_bundle_load(q, data, len(data), C.byref(self._h), C.byref(err)) == 0:
            self.from_cache = True
            return True
        _take_str(lib, err)  # a bundle the runtime refuses: deleted, the caller rebuilds
        discard(path)
        return False

    def _build(self, q):
        lib = self._lib
        bad = [w for w in _CRASHY_SOURCE if w in self.source]
        if bad:
            raise SyclBuildError(
                "sycl", self.name, f"{bad} crash the DPC++ kernel_compiler of this runtime; "
                "use a work_group_memory<T[]> kernel parameter (LocalMem)", self.source)
        opts = (C.c_char_p * max(1, len(self.options)))(
            *[o.encode() for o in self.options])
        log, err = C.c_void_p(), C.c_void_p()
        rc = lib.qk_build(q, self.source.encode(), opts, len(self.options),
                          C.byref(self._h), C.byref(log), C.byref(err))
        self.build_log = _take_str(lib, log)
        if rc != 0:
            raise SyclBuildError("sycl", self.name,
                                 f"options {self.options}\n{_take_str(lib, err)}", self.source)

    def _cache_path(self) -> Path:
        h = hashlib.sha256("\0".join(
            [*identity(self.queue), self.source, *self.options]
        ).encode()).hexdigest()[:24]
        return cache_dir("sycl_bundles", f"{h}.syclbin")

    def to_bytes(self) -> bytes:
        """The bundle as SYCLBIN bytes (device code for this device)."""
        lib, data, size, err = self._lib, C.c_void_p(), C.c_size_t(), C.c_void_p()
        _check(lib, lib.qk_bundle_save(self._h, C.byref(data), C.byref(size),
                                       C.byref(err)), err, "saving bundle")
        try:
            return C.string_at(data, size.value)
        finally:
            lib.qk_free(data)

    def kernel(self, name: str) -> "Kernel":
        """The extern "C" free-function kernel ``name``."""
        lib, h, err = self._lib, C.c_void_p(), C.c_void_p()
        _check(lib, lib.qk_get_kernel(self._h, name.encode(), C.byref(h),
                                      C.byref(err)), err, f"kernel {name!r}")
        return Kernel(self, name, h)

    def __del__(self):
        if getattr(self, "_h", None) and self._h.value:
            self._lib.qk_bundle_release(self._h)
            self._h = None


class Kernel:
    def __init__(self, program: Program, name: str, handle: C.c_void_p):
        self.program, self.name, self._h = program, name, handle
        self._lib = program._lib

    def info(self, queue=None) -> dict:
        """Compiled kernel facts for the device of ``queue`` (default: the program's)."""
        lib, out, err = self._lib, (C.c_uint64 * 5)(), C.c_void_p()
        q = C.c_void_p(_queue_ref(queue if queue is not None else self.program.queue))
        _check(lib, lib.qk_kernel_info(q, self._h, out, C.byref(err)), err, "kernel info")
        keys = ("compile_sub_group_size", "max_sub_group_size",
                "max_work_group_size", "private_mem_size", "num_args")
        return {k: (None if v == 2**64 - 1 else int(v)) for k, v in zip(keys, out)}

    def __del__(self):
        if getattr(self, "_h", None) and self._h.value:
            self._lib.qk_kernel_release(self._h)
            self._h = None


class Event:
    """A submitted launch. ``profile_ns()`` needs a profiling-enabled queue
    (dpctl.SyclQueue(dev, property="enable_profiling"))."""

    def __init__(self, lib, handle: C.c_void_p, keepalive=None):
        self._lib, self._h = lib, handle
        self._keepalive = keepalive  # USM args must outlive the kernel

    def wait(self) -> None:
        err = C.c_void_p()
        _check(self._lib, self._lib.qk_event_wait(self._h, C.byref(err)), err, "kernel")

    def profile_ns(self) -> tuple[int, int]:
        """Device (start, end) timestamps in ns; waits for completion."""
        s, e, err = C.c_uint64(), C.c_uint64(), C.c_void_p()
        _check(self._lib, self._lib.qk_event_profile(
            self._h, C.byref(s), C.byref(e), C.byref(err)), err, "profiling")
        return s.value, e.value

    @property
    def elapsed_ns(self) -> int:
        s, e = self.profile_ns()
        return e - s

    def __del__(self):
        if getattr(self, "_h", None) and self._h.value:
            self._lib.qk_event_release(self._h)
            self._h = None
