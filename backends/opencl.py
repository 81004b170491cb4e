"""OpenCL backend through pyopencl: NVIDIA, Intel (GPU and CPU runtime), pocl, any ICD.

Each device builds its Target from what it reports (opencl_target.py), so one template runs on
OpenCL C 1.2 devices without fp16 or sub-groups (NVIDIA, pocl) and on ones with both (Intel).

Threads: a pyopencl Kernel holds its arguments between clSetKernelArg and the enqueue, so two
threads launching one kernel would mix their arguments; each device serializes set-args+enqueue
under one lock (the enqueue returns at once, so the lock is held for microseconds). The same lock
covers everything else qkgen does with the device's queue and memory (allocations, fills, copies in
and out, freeing a call's own buffers once it has read its result, dropping a launch's event):
the spec calls those thread-safe, but a CI run crashed in a CPU driver with one thread reading a
result while another was finishing its call (where Python frees that call's buffers).
"""

from __future__ import annotations

import re
import sys
import threading
import warnings
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, BuildError, QKGenValueError
from .alloc import check_alloc, check_output_shape
from .base import (VECTOR_ALIGN, Backend, Device, DeviceInfo, host_dtype, launch_shape, local_nbytes,
                   scalar_dtype)  # fmt: skip
from .launch import arg_template, filled
from .opencl_arrays import array_builder
from .opencl_bench import opencl_copy_ceiling
from .opencl_target import device_target, opencl_c_version

_cl = None


def cl():
    """pyopencl, imported on first use, after registering pip-installed OpenCL runtimes."""
    global _cl
    if _cl is None:
        from . import icd

        icd.register_runtimes()
        try:
            import pyopencl
        except ImportError as e:
            raise BackendUnavailable(f"opencl: pyopencl is not installed ({e}); pip install 'qkgen[opencl]'")
        _cl = pyopencl
    return _cl


_KIND_ORDER = {"gpu": 0, "accelerator": 1, "cpu": 2}


def _kind(dev) -> str:
    t = dev.type
    c = cl().device_type
    return "gpu" if t & c.GPU else "accelerator" if t & c.ACCELERATOR else "cpu"


def _platform_devices(platform) -> list:
    """A platform's devices; a platform that reports none (or fails to) lists none."""
    try:
        return list(platform.get_devices())
    except Exception:  # DEVICE_NOT_FOUND from an ICD with no device, or a broken driver
        return []


class OpenCLBackend(Backend):
    name = "opencl"

    def __init__(self):
        self._devices: list[DeviceInfo] | None = None
        self._raw: list[Any] = []
        self._lock = threading.Lock()
        self.unusable: list[str] = []  # devices left out of the list, with the reason

    def devices(self) -> list[DeviceInfo]:
        with self._lock:
            if self._devices is None:
                try:
                    platforms = cl().get_platforms()
                except cl().Error as e:  # no ICD at all: an empty platform list
                    raise BackendUnavailable(f"opencl: no OpenCL platform found ({e})") from None
                found = [(p, d) for p in platforms for d in _platform_devices(p)]
                found = [(p, d) for p, d in found if self._builds(p, d)]
                # GPUs first; among CPUs, vendor runtimes before pocl (fp16 and sub-groups).
                found.sort(key=lambda pd: (_KIND_ORDER[_kind(pd[1])], "Portable" in pd[0].name))
                self._raw = [d for _, d in found]
                self._devices = [self._info(i, p, d) for i, (p, d) in enumerate(found)]
        return self._devices

    def _builds(self, platform, dev) -> bool:
        """Whether the device's compiler builds a trivial kernel. One that cannot (pocl whose LLVM
        does not know the host CPU: "unknown target CPU 'generic'") is left out of the device list
        and reported by `unusable`, rather than failing every kernel later."""
        try:
            ctx = cl().Context([dev])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl().CompilerWarning)
                cl().Program(ctx, "__kernel void qkgen_probe(__global int* a) { a[0] = 1; }").build(cache_dir=False)
            return True
        except Exception as e:  # any build or context failure makes the device unusable here
            why = " ".join(str(e).split())
            m = re.search(r"error: ([^\n]*?)(?: Device | \(options|$)", why)
            self.unusable.append(f"{dev.name.strip()} ({platform.name.strip()}): cannot build kernels: "
                                 f"{m.group(1) if m else why[:200]}")  # fmt: skip
            return False

    def _info(self, index: int, platform, dev) -> DeviceInfo:
        name = dev.name.strip()
        major, minor = opencl_c_version(dev)
        return DeviceInfo(
            backend=self.name, index=index, name=name, kind=_kind(dev), platform=platform.name.strip(),
            target=device_target(dev, name),
            details={"memory": f"{dev.global_mem_size / 2**30:.1f} GiB", "driver": dev.driver_version},
            aliases=("pocl",) if "Portable Computing Language" in platform.name else (),
        )  # fmt: skip

    def _open(self, info: DeviceInfo) -> OpenCLDevice:
        return OpenCLDevice(info, self._raw[info.index])

    def adopt(self, handle: Any):
        """A user's pyopencl Context (qkgen makes a profiling queue on it) or CommandQueue (used
        as it is): arrays of that context are then accepted."""
        if "pyopencl" not in sys.modules:
            return None
        c = cl()
        if isinstance(handle, c.CommandQueue):
            ctx, queue, dev = handle.context, handle, handle.device
        elif isinstance(handle, c.Context):
            ctx, queue, dev = handle, None, handle.devices[0]
        else:
            return None
        self.devices()
        info = next((i for i, d in zip(self._devices, self._raw) if d == dev), None)
        if info is None:
            raise QKGenValueError(f"device: the {type(handle).__name__}'s device {dev.name!r} is not one "
                                  f"of {', '.join(i.name for i in self._devices)}")  # fmt: skip
        key = (type(handle).__name__, handle.int_ptr)
        return key, OpenCLDevice(info, dev, ctx=ctx, queue=queue)


class OpenCLDevice(Device):
    backend = "opencl"
    unoptimized = ("-cl-opt-disable",)
    native_name = "pyopencl.array.Array on this device's context"

    def __init__(self, info: DeviceInfo, dev, ctx=None, queue=None):
        super().__init__(info)
        c = cl()
        self.dev = dev
        self.ctx = ctx if ctx is not None else c.Context([dev])
        self.queue = queue if queue is not None else c.CommandQueue(
            self.ctx, properties=c.command_queue_properties.PROFILING_ENABLE
        )  # fmt: skip
        self._queue_lock = threading.RLock()  # every use of the queue and its memory (see above)

    def identity(self) -> list[str]:
        d = self.dev
        return [d.name, d.vendor, d.version, d.driver_version, d.platform.name, d.platform.version]

    def build_options(self, ks) -> list[str]:
        # Sub-group built-ins need OpenCL C 2.0+ on Intel; C 1.2 devices get the default.
        major, minor = opencl_c_version(self.dev)
        opts = [f"-cl-std=CL{major}.{minor}"] if major >= 2 else []
        # quantize_q8_1 divides (amax / 127, 1 / d) and must match the reference bit for bit.
        return opts + ["-cl-fp32-correctly-rounded-divide-sqrt", *self.quick_build_options()]

    def _build(self, ks, opts: list[str], key: str):
        c = cl()
        binary = self.cache_load(key, ".bin")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", c.CompilerWarning)  # vectorizer remarks, not problems
            kern = None
            if binary is not None:
                try:
                    prg = c.Program(self.ctx, [self.dev], [binary]).build(options=opts, cache_dir=False)
                    kern = getattr(prg, ks.name)
                except Exception:  # the driver refused it (another driver wrote it?): rebuild
                    self.cache_discard(key, ".bin")
            if kern is None:
                try:
                    prg = c.Program(self.ctx, ks.source).build(options=opts, cache_dir=False)
                except c.RuntimeError as e:  # pyopencl's message carries the device's build log
                    raise BuildError("opencl", ks.name, str(e), ks.source) from None
                kern = getattr(prg, ks.name)
                self.cache_store(key, ".bin", bytes(prg.binaries[0]))
        kern.set_scalar_arg_dtypes([_np_scalar(a) for a in ks.args])
        return kern

    # ---- memory ----
    def is_native(self, array: Any) -> bool:
        if "pyopencl" not in sys.modules:
            return False
        import pyopencl.array as cla

        return isinstance(array, cla.Array)

    def native_buffer(self, array: Any, name: str):
        if array.context != self.ctx:
            raise QKGenValueError(f"{name}: array lives on another OpenCL context; allowed: arrays allocated "
                                  f"on the context of {self.info.name} (open_device('opencl', ...).ctx, or "
                                  "open_device('opencl', your_queue))")  # fmt: skip
        if not array.flags.c_contiguous:
            raise QKGenValueError(f"{name}: array is not contiguous; allowed: C-contiguous arrays")
        if array.offset == 0:
            return array.base_data
        align = self.dev.mem_base_addr_align // 8
        if array.offset % max(align, VECTOR_ALIGN):
            raise QKGenValueError(f"{name}: array starts at offset {array.offset}; allowed: multiples of "
                                  f"{max(align, VECTOR_ALIGN)} bytes")  # fmt: skip
        return array.base_data.get_sub_region(array.offset, array.nbytes)

    def _check_alloc(self, nbytes: int, what: str) -> None:
        check_alloc(nbytes, int(self.dev.max_mem_alloc_size), what, self.info.name, "CL_DEVICE_MAX_MEM_ALLOC_SIZE")

    def upload(self, host: np.ndarray):
        self._check_alloc(host.nbytes, "input")
        c = cl()
        flags = c.mem_flags.READ_ONLY | c.mem_flags.COPY_HOST_PTR
        with self._queue_lock:
            return c.Buffer(self.ctx, flags, hostbuf=host if host.nbytes else np.zeros(1, np.uint8))

    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False):
        import pyopencl.array as cla

        self._check_alloc(count * host_dtype(dtype).itemsize, "output")
        with self._queue_lock:
            arr = cla.empty(self.queue, (count,), host_dtype(dtype))
            if poison and arr.nbytes:  # all-ones bytes: NaN in f32, f16 and bf16
                cl().enqueue_fill_buffer(self.queue, arr.base_data, np.uint8(0xFF), 0, arr.nbytes)
        return arr.base_data, arr

    def allocator(self, count: int, dtype: str, like: Any, shape: tuple | None):
        """Device.allocator's outputs as empty() makes them, the arrays made without pyopencl's
        per-call checks (opencl_arrays.py): shape and dtype are checked here, once a binding."""
        nbytes = count * host_dtype(dtype).itemsize
        self._check_alloc(nbytes, "output")
        if not nbytes:
            return super().allocator(count, dtype, like, shape)
        check_output_shape(shape, count)
        c, ctx, queue, lock = cl(), self.ctx, self.queue, self._queue_lock
        with lock:  # the probe arrays' buffer is made and freed under it too
            flat = array_builder(queue, (count,), host_dtype(dtype))
            shaped = flat if shape is None or tuple(shape) == (count,) else array_builder(queue, shape,
                                                                                           host_dtype(dtype))

        def alloc(like: Any, poison: bool) -> tuple[Any, Any]:
            with lock:
                buf = c.Buffer(ctx, c.mem_flags.READ_WRITE, nbytes)
                if poison:  # all-ones bytes: NaN in f32, f16 and bf16
                    c.enqueue_fill_buffer(queue, buf, np.uint8(0xFF), 0, nbytes)
            return buf, (flat if like is None else shaped)(buf)

        return alloc

    def scratch_keyer(self, like: Any):
        """pyopencl arrays: one key, the device's queue, where it runs commands in order (every
        launch goes to it, so a call's launches follow the last call's); an out-of-order queue
        (a user's) gets none. An allocation costs about 90 us on Intel's CPU runtime."""
        in_order = not self.queue.properties & cl().command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        if not (self.is_native(like) and in_order):
            return None
        key = ("queue", id(self.queue))
        return lambda: key

    def zeros(self, count: int, dtype: str, like: Any = None):
        buf, arr = self.empty(count, dtype, like=like)
        if arr.nbytes:
            with self._queue_lock:
                cl().enqueue_fill_buffer(self.queue, buf, np.uint8(0), 0, arr.nbytes)
        return buf, arr

    def download(self, array: Any, dtype: str, count: int) -> np.ndarray:
        with self._queue_lock:  # a blocking read: other threads' enqueues wait for it
            host = array.get(queue=self.queue)
        return host.view(host_dtype(dtype))[:count]

    def discard(self, buffers: list) -> None:
        # under the lock, like every other use of the device's memory, not in a deallocator that
        # runs wherever a reference drops (the crash above was in one thread's end of a call)
        with self._queue_lock:
            for buf in buffers:
                buf.release()

    def local_arg(self, dtype: str, count: int):
        return cl().LocalMemory(max(1, local_nbytes(dtype, count)))

    # ---- launches ----
    def launch(self, kernel, args: list, global_size, local_size, local_bytes: int = 0):
        """local_bytes is not used: OpenCL kernels get local memory as local_arg() arguments."""
        g, loc = launch_shape(global_size, local_size)
        with self._queue_lock:  # set-args + enqueue on a shared Kernel object: one thread at a time
            return kernel(self.queue, g, loc, *args)

    def launcher(self, kernel, args: list, dynamic: tuple[int, ...], global_size, local_size, local_bytes: int = 0):
        """Device.launcher's run(values), the geometry checked once and each launch enqueued directly."""
        g, loc = launch_shape(global_size, local_size)
        template, queue, lock = arg_template(args, dynamic), self.queue, self._queue_lock

        def run(values: list) -> None:
            a = filled(template, dynamic, values)
            with lock:  # set-args + enqueue on a shared Kernel; its event is dropped here, still under the lock
                kernel(queue, g, loc, *a)

        return run

    def synchronize(self) -> None:
        self.queue.finish()

    def time_ms(self, kernel, args: list, global_size, local_size, local_bytes: int = 0) -> float:
        self._need_profiling()
        ev = self.launch(kernel, args, global_size, local_size, local_bytes)
        ev.wait()
        return (ev.profile.end - ev.profile.start) * 1e-6

    def _need_profiling(self) -> None:
        if not self.queue.properties & cl().command_queue_properties.PROFILING_ENABLE:
            raise QKGenValueError("device: the command queue has no PROFILING_ENABLE; allowed for timing: a "
                                  "queue made with profiling, or a Context (qkgen makes one)")  # fmt: skip

    def copy_ceiling(self, nbytes: int, iters: int = 20, warmup: int = 3) -> dict:
        self._need_profiling()
        return opencl_copy_ceiling(self, cl(), nbytes, iters, warmup)

    def l2_bytes(self) -> int | None:
        size = int(self.dev.global_mem_cache_size or 0)
        return size or None


def _np_scalar(arg):
    return {"u32": np.uint32, "u64": np.uint64, "f32": np.float32}.get(scalar_dtype(arg))


BACKEND = OpenCLBackend()
