"""The CUDA driver: pycuda for devices, contexts and memory, plus the few libcuda calls pycuda does
not expose (module loading, launches on foreign streams, events, pointer attributes, async copies),
made through ctypes on the same libcuda pycuda is linked to, so there is one driver state.

pycuda can neither wrap a foreign stream handle nor hand out a kernel's CUfunction, which is why
modules are loaded and kernels launched here rather than through pycuda.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailable, QKGenError, QKGenValueError

_LIBCUDA = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 1, 9
_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_STATIC_SHARED_LIMIT = 48 * 1024  # dynamic shared memory beyond this needs an opt-in per kernel
_GRID_LIMITS = (2**31 - 1, 65535, 65535)


class CUDAError(QKGenError, RuntimeError):
    """A CUDA driver call made through libcuda failed."""

    def __init__(self, call: str, code: int, text: str):
        self.call, self.code = call, code
        super().__init__(f"cuda: {call} failed: {text}")


class LibCuda:
    """libcuda's functions by name; a non-zero result raises CUDAError with the driver's text."""

    def __init__(self, lib: ctypes.CDLL):
        self._lib = lib

    def __call__(self, fn: str, *args) -> None:
        rc = getattr(self._lib, fn)(*args)
        if rc != 0:
            raise CUDAError(fn, rc, self.describe(rc))

    def function(self, fn: str) -> Any:
        """The raw function, returning the CUresult: for hot paths that pass ready-made ctypes
        objects (half the cost of converting plain ints through argtypes)."""
        f = self._lib[fn]
        f.restype = ctypes.c_int
        return f

    def describe(self, rc: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self._lib.cuGetErrorName(rc, ctypes.byref(name))
        self._lib.cuGetErrorString(rc, ctypes.byref(text))
        return f"{(name.value or b'CUDA error %d' % rc).decode()}: {(text.value or b'').decode()}"


_driver_cache: tuple[Any, LibCuda] | None = None
_driver_lock = threading.Lock()


def driver() -> tuple[Any, LibCuda]:
    """(pycuda.driver, libcuda), loaded and initialised once; BackendUnavailable says why not."""
    global _driver_cache
    with _driver_lock:
        if _driver_cache is None:
            _driver_cache = _load()
    return _driver_cache


def _load() -> tuple[Any, LibCuda]:
    try:
        found = importlib.util.find_spec("pycuda") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise BackendUnavailable("cuda: pycuda is not installed; pip install 'qkgen[cuda]'")
    try:
        lib = ctypes.CDLL(_LIBCUDA)
    except OSError as e:
        raise BackendUnavailable(f"cuda: cannot load libcuda (no NVIDIA driver): {e}") from None
    try:
        import pycuda.driver as drv
    except ImportError as e:
        why = f"cuda: pycuda cannot be imported ({e}); is it built for this driver?"
        raise BackendUnavailable(why) from None
    try:
        drv.init()
    except drv.Error as e:
        if "no CUDA-capable device" in str(e):
            raise BackendUnavailable(f"cuda: no CUDA GPU ({e})") from None
        raise BackendUnavailable(f"cuda: the CUDA driver failed to initialise ({e})") from None
    return drv, LibCuda(lib)


def nvidia_driver_version() -> str:
    try:  # Linux; elsewhere the CUDA driver API version alone identifies the driver
        return Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""


@dataclass
class Kernel:
    name: str
    module: ctypes.c_void_p  # never unloaded: a device keeps its kernels for the process's life
    func: ctypes.c_void_p
    kinds: tuple[str, ...]  # per argument: "in"/"out" (pointer), "u32", "u64", "f32"
    dynamic_shared: int = _STATIC_SHARED_LIMIT  # what the kernel may take without a new opt-in
    # launched with programmatic stream serialization: it waits in-kernel for the grid before it
    # (KernelSource.grid_wait), so it may start before that grid ends
    programmatic: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


def load_module(cu: LibCuda, cubin: bytes, name: str, kinds: tuple[str, ...], programmatic: bool = False) -> Kernel:
    """Load a cubin into the current context and look its kernel up."""
    module, func = ctypes.c_void_p(), ctypes.c_void_p()
    cu("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(cubin))
    cu("cuModuleGetFunction", ctypes.byref(func), module, name.encode())
    return Kernel(name, module, func, kinds, programmatic=programmatic and _has_launch_ex(cu))


def _has_launch_ex(cu: LibCuda) -> bool:
    """Whether the driver has cuLaunchKernelEx (CUDA 12 on); without it a kernel that waits for the
    grid before it is launched plainly, after that grid, and its wait returns at once."""
    try:
        cu.function("cuLaunchKernelEx")
    except AttributeError:
        return False
    return True


# cuLaunchKernelEx's configuration (cuda.h: CUlaunchConfig, CUlaunchAttribute), for programmatic
# dependent launch: attribute CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION set to 1
class _AttrValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("flag", ctypes.c_int)]


class _Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttrValue)]


class _LaunchConfig(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attr)), ("nattrs", ctypes.c_uint)]


_PROGRAMMATIC_STREAM_SERIALIZATION = 6
assert ctypes.sizeof(_Attr) == 72 and _LaunchConfig.stream.offset == 32 and ctypes.sizeof(_LaunchConfig) == 56


def _programmatic_config(grid: tuple, block: tuple, shared: int) -> tuple[_LaunchConfig, _Attr]:
    """A launch configuration letting the kernel start before the grid before it ends (returned with
    its attribute, which must outlive it); the stream is set per launch."""
    attr = _Attr(_PROGRAMMATIC_STREAM_SERIALIZATION)
    attr.value.flag = 1
    cfg = _LaunchConfig((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), shared, None, ctypes.pointer(attr), 1)
    return cfg, attr


def _param(kernel: Kernel, i: int, kind: str, a: Any):
    """The ctypes value of argument i: f32 and u32 scalars by their kind, pointers and u64 (and any
    other kind) as 64-bit."""
    if kind == "f32":
        return ctypes.c_float(float(a))
    if kind == "u32":
        if not 0 <= int(a) < 2**32:
            raise QKGenValueError(f"args[{i}]: {a} does not fit a u32 argument of {kernel.name}")
        return ctypes.c_uint32(int(a))
    if kind == "u64" and not 0 <= int(a) < 2**64:
        raise QKGenValueError(f"args[{i}]: {a} does not fit a u64 argument of {kernel.name}")
    return ctypes.c_uint64(int(a))


def _params(kernel: Kernel, args: list):
    if len(args) != len(kernel.kinds):
        raise QKGenValueError(f"args: {kernel.name} takes {len(kernel.kinds)} arguments, got {len(args)}")
    vals = [_param(kernel, i, kind, a) for i, (kind, a) in enumerate(zip(kernel.kinds, args))]
    # vals must outlive the call: returned with the pointer array
    return vals, (ctypes.c_void_p * len(vals))(*(ctypes.addressof(v) for v in vals))


def _check_launch(cu: LibCuda, kernel: Kernel, grid: tuple, shared: int) -> None:
    for i, (g, lim) in enumerate(zip(grid, _GRID_LIMITS)):
        if not 0 < g <= lim:
            raise QKGenValueError(f"global_size: {g} work-groups in dimension {i}; allowed: 1..{lim}")
    if shared > kernel.dynamic_shared:
        with kernel.lock:  # an opt-in per kernel, raised as launches ask for more
            cu("cuFuncSetAttribute", kernel.func, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
               ctypes.c_int(shared))  # fmt: skip
            kernel.dynamic_shared = shared


def launch_kernel(cu: LibCuda, kernel: Kernel, args: list, grid: tuple, block: tuple, shared: int,
                  stream: int) -> None:  # fmt: skip
    """cuLaunchKernel over a 3-D grid of 3-D blocks with `shared` bytes of dynamic shared memory."""
    if _deferred:
        free_deferred()
    _check_launch(cu, kernel, grid, shared)
    vals, params = _params(kernel, args)
    if kernel.programmatic:
        cfg, attr = _programmatic_config(grid, block, shared)
        cfg.stream = stream or None
        cu("cuLaunchKernelEx", ctypes.byref(cfg), kernel.func, params, None)
        del vals, attr
        return
    dims = [ctypes.c_uint(v) for v in (*grid, *block)]
    cu("cuLaunchKernel", kernel.func, *dims, ctypes.c_uint(shared), ctypes.c_void_p(stream), params, None)
    del vals


_VOIDP, _UINT = ctypes.c_void_p, ctypes.c_uint


class PackedLaunch:
    """One kernel's launch with its parameters packed once (the current context's; grid, shared
    memory and fixed arguments checked once): a call writes the pointers that change into the
    packed buffer and calls cuLaunchKernel, which copies the parameters before it returns. The
    write and the launch are one step under a lock, so threads cannot mix their pointers.

    stream: None (the legacy stream) or a function giving the stream at each call (torch's current
    stream, which is per thread and is the capture stream inside torch.cuda.graph)."""

    def __init__(self, cu: LibCuda, kernel: Kernel, args: list, dynamic: tuple[int, ...], grid: tuple,
                 block: tuple, shared: int, ctx: int, stream: Any = None):  # fmt: skip
        _check_launch(cu, kernel, grid, shared)
        args = [0 if i in dynamic else a for i, a in enumerate(args)]
        self.vals, self.params = _params(kernel, args)
        self.slots = [self.vals[i] for i in dynamic]
        self.cu, self.ctx, self.stream = cu, ctx, stream
        if kernel.programmatic:  # cuLaunchKernelEx: the configuration holds grid, block and the attribute
            self._cfg, self._attr = _programmatic_config(grid, block, shared)
            self._launch = functools.partial(self._launch_ex, cu.function("cuLaunchKernelEx"), kernel.func)
        else:
            dims = [_UINT(v) for v in (*grid, *block, shared)]
            self._launch = functools.partial(cu.function("cuLaunchKernel"), kernel.func, *dims)
        self._get_current = cu.function("cuCtxGetCurrent")
        self._current = _VOIDP()
        self._current_p = ctypes.pointer(self._current)
        self._lock = threading.Lock()

    def _launch_ex(self, launch_ex, func, stream, params, extra) -> int:
        self._cfg.stream = stream
        return launch_ex(ctypes.byref(self._cfg), func, params, extra)

    def __call__(self, values: list) -> None:
        if _deferred:  # buffers dropped during a capture that has ended (torch's warm path makes none)
            free_deferred()
        stream = None if self.stream is None else _VOIDP(self.stream())
        with self._lock:
            for slot, v in zip(self.slots, values):
                try:
                    slot.value = v  # ints (TorchPtr) and objects with __index__ (DeviceBuffer)
                except TypeError:
                    slot.value = int(v)
            self._get_current(self._current_p)
            if self._current.value == self.ctx:  # torch's thread: the primary context is current
                rc = self._launch(stream, self.params, None)
            else:
                with pushed(self.cu, self.ctx):
                    rc = self._launch(stream, self.params, None)
        if rc:
            raise CUDAError("cuLaunchKernel", rc, self.cu.describe(rc))


def capture_in_progress() -> bool:
    """Whether torch is capturing a CUDA graph on this thread's current stream. cuMemFree there
    would end the capture with an error (torch captures in its global mode, where a free is an
    unsafe call), and a garbage collection can drop a buffer at any allocation, capture or not.
    A capture on another thread is not seen (torch does not tell): a DeviceBuffer dropped on a
    thread other than the capturing one during a capture still ends it."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing())
    except Exception:  # a torch without CUDA, or one half torn down at interpreter exit
        return False


_deferred: list[tuple[LibCuda, int, int]] = []  # (driver, context, pointer) dropped during a capture


def _mem_free(cu: LibCuda, ctx: int, ptr: int) -> None:
    with pushed(cu, ctx):
        cu("cuMemFree_v2", ctypes.c_uint64(ptr))


def free_deferred() -> None:
    """Free what was dropped during a capture, once none is in progress here: at the next
    allocation or free of a DeviceBuffer and the next launch. A pointer whose free fails (its
    context gone) is dropped: the error belongs to no call made now."""
    while _deferred and not capture_in_progress():
        try:
            cu, ctx, ptr = _deferred.pop()
        except IndexError:  # another thread took the last one
            return
        try:
            _mem_free(cu, ctx, ptr)
        except CUDAError:
            pass


class DeviceBuffer:
    """Device memory allocated in a context and freed in that context from whichever thread drops
    it last: pycuda's own allocations warn "out-of-thread context could not be cleaned up" and leak
    when collected on another thread than the one that opened the context (a server's workers)."""

    def __init__(self, cu: LibCuda, ctx_handle: int, nbytes: int):
        self.cu, self.ctx, self.nbytes = cu, int(ctx_handle), max(int(nbytes), 1)
        free_deferred()
        ptr = ctypes.c_uint64()
        with pushed(cu, self.ctx):
            cu("cuMemAlloc_v2", ctypes.byref(ptr), ctypes.c_size_t(self.nbytes))
        self.ptr = ptr.value

    def __int__(self) -> int:
        return self.ptr

    __index__ = __int__

    def upload(self, host) -> None:
        """Copy a contiguous numpy array in (synchronous, as cuMemcpyHtoD)."""
        if host.nbytes:
            with pushed(self.cu, self.ctx):
                self.cu("cuMemcpyHtoD_v2", ctypes.c_uint64(self.ptr), ctypes.c_void_p(host.ctypes.data),
                        ctypes.c_size_t(host.nbytes))  # fmt: skip

    def download(self, host) -> None:
        if host.nbytes:
            with pushed(self.cu, self.ctx):
                self.cu("cuMemcpyDtoH_v2", ctypes.c_void_p(host.ctypes.data), ctypes.c_uint64(self.ptr),
                        ctypes.c_size_t(host.nbytes))  # fmt: skip

    def fill(self, byte: int) -> None:
        with pushed(self.cu, self.ctx):
            self.cu("cuMemsetD8_v2", ctypes.c_uint64(self.ptr), ctypes.c_ubyte(byte),
                    ctypes.c_size_t(self.nbytes))  # fmt: skip

    def free(self) -> None:
        if self.ptr:
            ptr, self.ptr = self.ptr, 0
            if capture_in_progress():
                _deferred.append((self.cu, self.ctx, ptr))
            else:
                _mem_free(self.cu, self.ctx, ptr)
                free_deferred()

    def __del__(self):
        try:
            self.free()
        except Exception:  # at interpreter exit the driver may be gone already
            pass


class pushed:  # noqa: N801 (a context manager used like a function)
    """`ctx_handle` current on this thread for the duration (libcuda's own push/pop)."""

    def __init__(self, cu: LibCuda, ctx_handle: int):
        self.cu, self.ctx = cu, ctx_handle

    def __enter__(self) -> None:
        self.cu("cuCtxPushCurrent_v2", ctypes.c_void_p(self.ctx))

    def __exit__(self, *exc) -> None:
        self.cu("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))


class EventTimer:
    """Milliseconds between two CUDA events recorded on one stream around some work."""

    def __init__(self, cu: LibCuda, stream: int):
        self.cu, self.stream = cu, ctypes.c_void_p(stream)
        self.start, self.end = ctypes.c_void_p(), ctypes.c_void_p()

    def __enter__(self) -> EventTimer:
        self.cu("cuEventCreate", ctypes.byref(self.start), 0)
        self.cu("cuEventCreate", ctypes.byref(self.end), 0)
        self.cu("cuEventRecord", self.start, self.stream)
        return self

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                ms = ctypes.c_float()
                self.cu("cuEventRecord", self.end, self.stream)
                self.cu("cuEventSynchronize", self.end)
                self.cu("cuEventElapsedTime", ctypes.byref(ms), self.start, self.end)
                self.ms = ms.value
        finally:
            self.cu("cuEventDestroy_v2", self.start)
            self.cu("cuEventDestroy_v2", self.end)
