"""SYCL backend through dpctl: Intel GPUs (Level Zero, OpenCL) and the Intel CPU OpenCL runtime.

dpctl finds devices, owns the queues and the USM memory; sycl_native compiles the rendered SYCL
C++ at run time (DPC++ kernel_compiler) and launches it on the dpctl queue. Each device gets one
in-order, profiling-enabled queue: uploads, launches and downloads run in submission order, and
events carry device timestamps.
"""

from __future__ import annotations

import hashlib
import re
import sys
import threading
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, QKGenValueError
from ..kernels.target import Target, intel_gpu_registers
from . import sycl_launch, sycl_native
from .alloc import check_alloc, check_output_shape
from .base import (VECTOR_ALIGN, Backend, Device, DeviceInfo, bundle_source, ceiling_bytes, copy_gbps,
                   dtype_name, host_dtype, launch_shape, local_nbytes, median_of, strip_prefix,
                   torch_dtype)  # fmt: skip
from .opencl_target import chosen_subgroup_size
from .sycl_usm import ForeignPtr, USMArray, c_contiguous, is_torch_xpu

# Preference order: Level Zero GPUs, OpenCL GPUs, then the Intel CPU OpenCL runtime.
ORDER = (("level_zero", "gpu"), ("opencl", "gpu"), ("opencl", "cpu"))
_BUNDLE_NAME = re.compile(r"[0-9a-f]{32}")  # what a .ref may name: a bundle key, never a path

_dpctl = None


def dpctl():
    """dpctl, imported on first use, after registering pip-installed OpenCL runtimes."""
    global _dpctl
    if _dpctl is None:
        from . import icd

        icd.register_runtimes()  # before dpctl's first device query, or opencl:cpu stays hidden
        try:
            import dpctl as mod
            import dpctl.memory  # noqa: F401
        except ImportError as e:
            why = f"sycl: dpctl is not installed ({e}); pip install 'qkgen[sycl]'"
            raise BackendUnavailable(why) from None
        _dpctl = mod
    return _dpctl


def device_target(dev, name: str) -> Target:
    sizes = tuple(sorted({int(s) for s in dev.sub_group_sizes or ()}))
    sg = chosen_subgroup_size(sizes)
    # dot4 stays False: dpctl does not list device extensions, so a native int8 dot is unverified.
    # registers: the GPUs this backend lists (ORDER: Level Zero and OpenCL GPUs of intel-sycl-rt,
    # which builds SPIR-V for Intel's devices) hold Intel's register file.
    return Target(name=f"sycl:{name}", backend="sycl", lang="SYCL 2020", fp16=bool(dev.has_aspect_fp16),
                  bf16=False, subgroup_size=sg, subgroup_sizes=sizes, dot4=False,
                  registers=intel_gpu_registers(sg) if _is_gpu(dev) else 0)  # fmt: skip


def _is_gpu(dev) -> bool:
    try:
        return bool(dev.is_gpu)
    except Exception:  # a device that cannot say: no register limit, the kernels as written
        return False


class SYCLBackend(Backend):
    name = "sycl"

    def __init__(self):
        self._devices: list[DeviceInfo] | None = None
        self._raw: list[Any] = []

    def why_unavailable(self) -> str | None:
        why = super().why_unavailable()
        if why is None:
            try:
                sycl_native.check_toolchain()
            except sycl_native.SyclError as e:
                return strip_prefix(str(e), self.name)
        return why

    def devices(self) -> list[DeviceInfo]:
        if self._devices is None:
            d = dpctl()
            found = [dev for be, kind in ORDER for dev in d.get_devices(backend=be, device_type=kind)]
            if not found:
                wanted = ", ".join(":".join(o) for o in ORDER)
                seen = ", ".join(x.filter_string for x in d.get_devices()) or "none"
                raise BackendUnavailable(f"sycl: no SYCL device: qkgen uses {wanted}; dpctl sees {seen}")
            self._raw = found
            self._devices = [
                DeviceInfo(
                    backend=self.name, index=i, name=dev.name.strip(), kind=dev.device_type.name,
                    platform=dev.sycl_platform.name.strip(), target=device_target(dev, dev.name.strip()),
                    details={"filter": dev.filter_string, "memory": f"{dev.global_mem_size / 2**30:.1f} GiB",
                             "driver": dev.driver_version},
                    aliases=(dev.filter_string,),
                )  # fmt: skip
                for i, dev in enumerate(found)
            ]
        return self._devices

    def _open(self, info: DeviceInfo) -> SYCLDevice:
        return SYCLDevice(info, self._raw[info.index])

    def adopt(self, handle: Any):
        """A user's dpctl SyclQueue: used as it is when in-order with profiling, else qkgen makes
        one on the same context and device; USM memory of that context is accepted."""
        if "dpctl" not in sys.modules or not isinstance(handle, dpctl().SyclQueue):
            return None
        self.devices()
        info = next((i for i, d in zip(self._devices, self._raw) if d == handle.sycl_device), None)
        if info is None:
            raise QKGenValueError(f"device: the SyclQueue's device {handle.sycl_device.name!r} is not one of "
                                  f"{', '.join(i.filter_string for i in self._raw)}")  # fmt: skip
        return ("SyclQueue", handle.addressof_ref()), SYCLDevice(info, handle.sycl_device, user_queue=handle)


class SYCLDevice(Device):
    backend = "sycl"
    unoptimized = ("-O0",)  # DPC++'s front end and device code
    native_name = "USM memory (__sycl_usm_array_interface__) or torch XPU tensors on this device"

    def __init__(self, info: DeviceInfo, sdev, user_queue=None):
        super().__init__(info)
        d = dpctl()
        self.sdev = sdev
        props = ["enable_profiling", "in_order"]
        if user_queue is None:
            self.queue = d.SyclQueue(sdev, property=props)
        elif user_queue.is_in_order and user_queue.has_enable_profiling:
            self.queue = user_queue
        else:  # launches rely on submission order and events with timestamps
            self.queue = d.SyclQueue(user_queue.sycl_context, sdev, property=props)
        self.user_queue = user_queue
        self._inflight: list = []  # what launches not waited on yet hold: events, or arguments (packed)
        self._inflight_lock = threading.Lock()
        self._bundles: dict[str, Any] = {}  # bundles shared by several kernels (compile_many)
        try:
            ok = sycl_native.can_build(self.queue)  # also builds the helper on first use
        except sycl_native.SyclError as e:
            raise BackendUnavailable(f"sycl: {e}") from None
        if not ok:
            raise BackendUnavailable(f"sycl: {info.name} cannot compile SYCL source at run time "
                                     "(no kernel_compiler support)")

    def identity(self) -> list[str]:
        return sycl_native.identity(self.queue)

    def _build(self, ks, opts: list[str], key: str):
        # One key scheme for every backend (disk_key); the bundle is stored as SYCLBIN under it,
        # or, for a kernel built by compile_many, a ".ref" file names the shared bundle.
        shared = self._ref(key)
        prg = self._shared_bundle(shared) if shared else None
        if prg is None:
            prg = sycl_native.Program(self.queue, ks.source, opts, cache=self.cache_path(key, ".syclbin"),
                                      name=ks.name)  # fmt: skip
        return prg.kernel(ks.name)  # kernel.program.from_cache tells whether it was compiled

    def compile_many(self, kss) -> list:
        """Kernels not cached yet are built in one bundle: each run-time build parses the SYCL
        headers for ~2 s, so 70 kernels take ~10 s together against ~140 s one by one."""
        todo: dict[tuple, dict[str, Any]] = {}
        for ks in kss:
            opts = self.build_options(ks)
            key = self.disk_key(ks, opts)
            if (ks.sha, " ".join(opts)) in self._kernels or self.cache_path(key, ".syclbin").is_file():
                continue
            shared = self._ref(key)
            if shared and self.cache_path(shared, ".syclbin").is_file():
                continue
            todo.setdefault(tuple(opts), {})[key] = ks
        for opts, group in todo.items():
            if len(group) > 1:
                self._build_shared(group, list(opts))
        return [self.compile(ks) for ks in kss]

    def _build_shared(self, group: dict[str, Any], opts: list[str]) -> None:
        kss = list(group.values())
        shared = hashlib.sha256("\0".join(sorted(group)).encode()).hexdigest()[:32]
        source = bundle_source(kss)
        try:
            prg = sycl_native.Program(self.queue, source, opts, cache=self.cache_path(shared, ".syclbin"),
                                      name=f"{len(kss)} kernels")  # fmt: skip
        except sycl_native.SyclBuildError:
            return  # compile() builds them one by one: the error then names the kernel at fault
        self._bundles[shared] = prg
        for key, ks in group.items():
            self._kernels[(ks.sha, " ".join(opts))] = prg.kernel(ks.name)
            self.cache_store(key, ".ref", shared.encode())

    def _ref(self, key: str) -> str | None:
        """The shared bundle a kernel's .ref names; a .ref that is not a bundle key (damaged, not
        UTF-8, a path) is deleted."""
        blob = self.cache_load(key, ".ref")
        if blob is None:
            return None
        name = blob.decode("ascii", errors="replace")
        if _BUNDLE_NAME.fullmatch(name):
            return name
        self.cache_discard(key, ".ref")
        return None

    def _shared_bundle(self, shared: str):
        if shared not in self._bundles:
            self._bundles[shared] = sycl_native.Program.load(self.queue, self.cache_path(shared, ".syclbin"),
                                                             name=shared)  # fmt: skip
        return self._bundles[shared]

    # ---- memory ----
    def is_native(self, array: Any) -> bool:
        return hasattr(array, "__sycl_usm_array_interface__") or is_torch_xpu(array)

    def _own_usm(self, array: Any):
        """array.mem for a USMArray whose memory this device's queue allocated (so of its context and
        device, C-contiguous), at an aligned address; else None. Skips dpctl's pointer queries
        (as_usm_memory: ~10 us a call); a .mem replaced since goes the full way."""
        if type(array) is USMArray:
            mem, (home, queue) = array.mem, array._home
            if mem is home and queue is self.queue and not mem._pointer % VECTOR_ALIGN:
                return mem
        return None

    def input_converter(self, sample: Any, name: str, dtypes: tuple[str, ...]):
        """For USMArrays: the dtype and _own_usm's checks; any other array, or one failing them, goes
        through as_input, whose error says what is allowed."""
        if type(sample) is not USMArray:
            return super().input_converter(sample, name, dtypes)
        own, as_input = self._own_usm, self.as_input

        def convert(a: Any) -> Any:
            mem = own(a) if dtype_name(a.dtype) in dtypes else None
            return as_input(a, name, dtypes) if mem is None else mem

        return convert

    def native_buffer(self, array: Any, name: str):
        # as_input has checked the dtype already
        mem = self._own_usm(array)
        if mem is not None:
            return mem
        if is_torch_xpu(array):
            return self._torch_buffer(array, name)
        d = dpctl()
        iface = array.__sycl_usm_array_interface__
        try:
            mem = d.memory.as_usm_memory(array)  # the data's address (offset applied), context, device
        except Exception as e:  # an address this device's context does not know
            raise QKGenValueError(f"{name}: USM memory is on another device or context ({e}); "
                                  f"allowed: USM memory of {self.info.name}") from None  # fmt: skip
        if mem.sycl_context != self.queue.sycl_context or (
            mem.get_usm_type() == "device" and mem.sycl_device != self.sdev
        ):
            raise QKGenValueError(f"{name}: USM memory lives on another device ({mem.sycl_device.name}); "
                                  f"allowed: USM memory of {self.info.name}")  # fmt: skip
        if not c_contiguous(iface["shape"], iface.get("strides")):
            raise QKGenValueError(f"{name}: array is not contiguous; allowed: C-contiguous arrays")
        ptr = mem.__sycl_usm_array_interface__["data"][0]
        if ptr % VECTOR_ALIGN:
            raise QKGenValueError(f"{name}: USM address {ptr:#x} is not {VECTOR_ALIGN}-byte aligned; "
                                  f"allowed: addresses that are multiples of {VECTOR_ALIGN}")  # fmt: skip
        owner = iface.get("syclobj")
        if isinstance(owner, d.SyclQueue) and owner != self.queue:
            owner.wait()  # work another queue still has in flight on this memory
        return mem

    def _torch_buffer(self, t, name: str):
        _, dev_id = t.__dlpack_device__()  # oneAPI DLPack: index among all SYCL root devices
        if dev_id != self.sdev.get_device_id():
            raise QKGenValueError(f"{name}: tensor lives on another device ({t.device}); "
                                  f"allowed: tensors on {self.info.name}")  # fmt: skip
        if not t.is_contiguous():
            raise QKGenValueError(f"{name}: tensor is not contiguous; allowed: contiguous tensors")
        if t.data_ptr() % VECTOR_ALIGN:
            raise QKGenValueError(f"{name}: tensor data is not {VECTOR_ALIGN}-byte aligned; allowed: "
                                  f"storage offsets that are multiples of {VECTOR_ALIGN} bytes")  # fmt: skip
        return ForeignPtr(t)

    def to_device(self, host: Any) -> USMArray:
        """A device copy of a host array, usable in place as a kernel input."""
        host = np.ascontiguousarray(host)
        return USMArray._made(self.upload(host), host.dtype, tuple(host.shape), self.queue)

    def _check_alloc(self, nbytes: int, what: str) -> None:
        check_alloc(nbytes, int(self.sdev.max_mem_alloc_size), what, self.info.name, "max_mem_alloc_size")

    def upload(self, host: np.ndarray):
        self._check_alloc(host.nbytes, "input")
        mem = dpctl().memory.MemoryUSMDevice(max(host.nbytes, 1), queue=self.queue)
        if host.nbytes:
            self.queue.memcpy(mem, host, host.nbytes)
        return mem

    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False):
        if like is not None and is_torch_xpu(like):
            import torch

            t = torch.empty(count, dtype=torch_dtype(torch, dtype), device=like.device)
            if poison:
                t.view(torch.uint8).fill_(0xFF)
            return ForeignPtr(t), t
        return self.allocator(count, dtype, None, None)(None, poison)  # flat, as every empty() output

    def allocator(self, count: int, dtype: str, like: Any, shape: tuple | None):
        """Device.allocator's outputs (empty() makes its USM ones through it), dtype, size and shape
        worked out once a binding (per call they cost ~10 us of lookups and conversions). Blocks are
        not pooled: one is free only once nothing references its memory (the array, its .mem, a
        launch), and a pooled view whose finalizer returns the block costs what dpctl's allocation and
        free do (~5 us)."""
        if like is not None and is_torch_xpu(like):
            return super().allocator(count, dtype, like, shape)
        dt = host_dtype(dtype)
        nbytes = count * dt.itemsize
        self._check_alloc(nbytes, "output")
        check_output_shape(shape, count)
        new, queue, made = dpctl().memory.MemoryUSMDevice, self.queue, USMArray._made
        nbytes, flat = max(nbytes, 1), (count,)
        shaped = flat if shape is None else tuple(int(s) for s in shape)

        def alloc(like: Any, poison: bool) -> tuple[Any, Any]:
            mem = new(nbytes, queue=queue)
            if poison:  # all-ones bytes: NaN in f32, f16 and bf16
                mem.memset(0xFF)
            return mem, made(mem, dt, flat if like is None else shaped, queue)

        return alloc

    def scratch_keyer(self, like: Any):
        """dpctl arrays: one key, the device's in-order queue (every launch goes to it, so a call's
        launches follow the last call's). torch XPU tensors get none."""
        if not self.is_native(like) or is_torch_xpu(like):
            return None
        key = ("queue", id(self.queue))
        return lambda: key

    def zeros(self, count: int, dtype: str, like: Any = None):
        buf, arr = self.empty(count, dtype, like=like)
        if like is not None and is_torch_xpu(like):
            arr.zero_()
        else:
            buf.memset(0)
        return buf, arr

    def download(self, array: Any, dtype: str, count: int) -> np.ndarray:
        if isinstance(array, USMArray):
            array = array.mem
        host = np.empty(count, host_dtype(dtype))
        with self._inflight_lock:
            done = len(self._inflight)  # launches submitted before this copy: finished after it
        if host.nbytes:
            self.queue.memcpy(host, array, host.nbytes)  # in-order queue: after the kernels
        with self._inflight_lock:
            del self._inflight[:done]
        return host

    def local_arg(self, dtype: str, count: int):
        return sycl_launch.LocalMem(local_nbytes(dtype, count))

    def launch(self, kernel, args: list, global_size, local_size, local_bytes: int = 0):
        g, loc = launch_shape(global_size, local_size)
        foreign = any(isinstance(a, ForeignPtr) for a in args)
        if foreign:
            import torch

            torch.xpu.synchronize()  # torch's queue is not ours: its writes must land first
        ev = sycl_launch.launch(self.queue, kernel, args, g, loc, local_bytes)
        if foreign:
            ev.wait()  # and the caller goes on using the tensors on torch's queue
        return self._track(ev)

    def _track(self, ev):
        """Keep a launch's event (it holds the arguments, e.g. uploaded inputs, alive), or a packed
        launch's arguments, until the queue is waited on; wait once 256 are kept."""
        with self._inflight_lock:
            self._inflight.append(ev)
            full = len(self._inflight) > 256
        if full:
            self.synchronize()
        return ev

    def launcher(self, kernel, args: list, dynamic: tuple[int, ...], global_size, local_size, local_bytes: int = 0):
        """Device.launcher's run(values) with the argument table packed once (sycl_launch.PackedLaunch);
        launches with torch XPU tensors go through launch(), which synchronizes with torch's queue."""
        generic = super().launcher(kernel, args, dynamic, global_size, local_size, local_bytes)
        if any(isinstance(a, ForeignPtr) for a in args):
            return generic
        g, loc = launch_shape(global_size, local_size)
        packed = sycl_launch.PackedLaunch(self.queue, kernel, args, dynamic, g, loc, local_bytes)
        track = self._track

        def run(values: list):
            if any(isinstance(v, ForeignPtr) for v in values):
                return generic(values)
            return track(packed(values))

        return run

    def synchronize(self) -> None:
        with self._inflight_lock:
            done = len(self._inflight)
        self.queue.wait()
        with self._inflight_lock:
            del self._inflight[:done]

    def time_ms(self, kernel, args: list, global_size, local_size, local_bytes: int = 0) -> float:
        return self.launch(kernel, args, global_size, local_size, local_bytes).elapsed_ns * 1e-6

    def copy_ceiling(self, nbytes: int, iters: int = 20, warmup: int = 3) -> dict:
        """queue.memcpy between two device allocations, timed by profiling events."""
        mem = dpctl().memory
        q, sd = self.queue, self.sdev
        nbytes = ceiling_bytes(nbytes, sd.max_mem_alloc_size, sd.global_mem_size)
        src, dst = mem.MemoryUSMDevice(nbytes, queue=q), mem.MemoryUSMDevice(nbytes, queue=q)
        src.memset(1)
        dst.memset(0)

        def run() -> float:
            ev = q.memcpy_async(dst, src, nbytes)
            ev.wait()
            return (ev.profiling_info_end - ev.profiling_info_start) * 1e-6

        gbps = copy_gbps(nbytes, median_of(run, iters, warmup))
        return {"gbps": gbps, "method": "SYCL queue.memcpy (dpctl, profiling events)", "buffer_bytes": nbytes,
                "all": {"queue.memcpy": gbps}}  # fmt: skip

    def l2_bytes(self) -> int | None:
        return int(self.sdev.global_mem_cache_size or 0) or None

BACKEND = SYCLBackend()
