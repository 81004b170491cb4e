"""SYCL backend through dpctl: Intel GPUs (Level Zero, OpenCL) and the Intel CPU OpenCL runtime.

dpctl finds devices, owns the queues and the USM memory; sycl_native compiles the rendered SYCL
C++ at run time (DPC++ kernel_compiler) and launches it on the dpctl queue. Each device gets one
in-order, profiling-enabled queue: uploads, launches and downloads run in submission order, and
events carry device timestamps.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, QKGenValueError
from . import sycl_native
from .base import HOST_DTYPES, VECTOR_ALIGN, Backend, Device, DeviceInfo

# Preference order: Level Zero GPUs, OpenCL GPUs, then the Intel CPU OpenCL runtime.
ORDER = (("level_zero", "gpu"), ("opencl", "gpu"), ("opencl", "cpu"))
_LOCAL_BYTES = {"float": 4, "uint": 4, "int": 4, "ushort": 2, "half": 2, "uchar": 1, "char": 1}
_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}

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


def _caps(dev) -> dict:
    sizes = [int(s) for s in dev.sub_group_sizes or ()]
    sg = 16 if 16 in sizes else max((s for s in sizes if s <= 32), default=0)
    # dot4 stays False: dpctl does not list device extensions, so a native int8 dot is unverified.
    return {"fp16": bool(dev.has_aspect_fp16), "subgroups": sg > 0, "subgroup_size": sg, "dot4": False}


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
                return f"sycl: {e}"
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
                    platform=dev.sycl_platform.name.strip(), caps=_caps(dev),
                    details={"filter": dev.filter_string, "memory": f"{dev.global_mem_size / 2**30:.1f} GiB",
                             "driver": dev.driver_version},
                )  # fmt: skip
                for i, dev in enumerate(found)
            ]
        return self._devices

    def _open(self, info: DeviceInfo) -> SYCLDevice:
        return SYCLDevice(info, self._raw[info.index])


class USMArray:
    """A typed, shaped view of device USM memory: what dequantize returns for USM inputs (dpctl
    0.22 has no array type; dpnp and others take it through __sycl_usm_array_interface__)."""

    def __init__(self, mem, dtype: Any, shape: tuple[int, ...]):
        self.mem, self.dtype, self.shape = mem, np.dtype(dtype), tuple(int(s) for s in shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def __sycl_usm_array_interface__(self) -> dict:
        return {**self.mem.__sycl_usm_array_interface__, "typestr": self.dtype.str, "shape": self.shape,
                "strides": None}  # fmt: skip

    def reshape(self, *shape) -> USMArray:
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if int(np.prod(shape)) != self.size:
            raise QKGenValueError(f"shape: cannot reshape {self.shape} to {shape}; "
                                  f"allowed: shapes of {self.size} elements")  # fmt: skip
        return USMArray(self.mem, self.dtype, shape)

    def to_host(self) -> np.ndarray:
        """A numpy copy (bf16 as uint16 bits); waits for the kernels writing it (in-order queue)."""
        host = np.empty(self.shape, self.dtype)
        if host.nbytes:
            self.mem.sycl_queue.memcpy(host, self.mem, host.nbytes)
        return host


class _ForeignPtr:
    """A USM address owned by another runtime (a torch XPU tensor) as a kernel argument. That
    runtime has its own queue, so launches using it are synchronized on both sides."""

    def __init__(self, tensor):
        self.tensor = tensor  # keeps the memory alive while the argument is

    @property
    def __sycl_usm_array_interface__(self) -> dict:
        return {"data": (self.tensor.data_ptr(), False), "shape": (0,), "typestr": "|u1", "version": 1}


def _is_torch_xpu(array: Any) -> bool:
    # Looks at the object only: torch without XPU support never makes an "xpu" tensor.
    device = getattr(array, "device", None)
    return type(array).__module__.startswith("torch") and getattr(device, "type", "") == "xpu"


def _c_contiguous(shape, strides) -> bool:
    if strides is None:
        return True
    expect = 1
    for n, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):  # strides count elements
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


class SYCLDevice(Device):
    backend = "sycl"
    native_name = "USM memory (__sycl_usm_array_interface__) or torch XPU tensors on this device"

    def __init__(self, info: DeviceInfo, sdev):
        super().__init__(info)
        d = dpctl()
        self.sdev = sdev
        self.queue = d.SyclQueue(sdev, property=["enable_profiling", "in_order"])
        self._inflight: list = []  # events of launches whose arguments must stay alive
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
        shared = self.cache_load(key, ".ref")
        prg = self._shared_bundle(shared.decode()) if shared else None
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
            shared = self.cache_load(key, ".ref")
            if shared and self.cache_path(shared.decode(), ".syclbin").is_file():
                continue
            todo.setdefault(tuple(opts), {})[key] = ks
        for opts, group in todo.items():
            if len(group) > 1:
                self._build_shared(group, list(opts))
        return [self.compile(ks) for ks in kss]

    def _build_shared(self, group: dict[str, Any], opts: list[str]) -> None:
        kss = list(group.values())
        shared = hashlib.sha256("\0".join(sorted(group)).encode()).hexdigest()[:32]
        # Each kernel keeps its own source in its own namespace (kernels are extern "C", so their
        # names are unchanged); includes go first, the headers' guards make the repeats no-ops.
        lines = (line for ks in kss for line in ks.source.splitlines())
        includes = dict.fromkeys(line for line in lines if line.startswith("#include"))
        source = "\n".join([*includes, *(f"namespace qk_{i} {{\n{ks.source}}}" for i, ks in enumerate(kss))])
        try:
            prg = sycl_native.Program(self.queue, source, opts, cache=self.cache_path(shared, ".syclbin"),
                                      name=f"{len(kss)} kernels")  # fmt: skip
        except sycl_native.SyclBuildError:
            return  # compile() builds them one by one: the error then names the kernel at fault
        self._bundles[shared] = prg
        for key, ks in group.items():
            self._kernels[(ks.sha, " ".join(opts))] = prg.kernel(ks.name)
            self.cache_store(key, ".ref", shared.encode())

    def _shared_bundle(self, shared: str):
        if shared not in self._bundles:
            self._bundles[shared] = sycl_native.Program.load(self.queue, self.cache_path(shared, ".syclbin"),
                                                             name=shared)  # fmt: skip
        return self._bundles[shared]

    # ---- memory ----
    def is_native(self, array: Any) -> bool:
        return hasattr(array, "__sycl_usm_array_interface__") or _is_torch_xpu(array)

    def native_buffer(self, array: Any, name: str):
        # as_input has checked the dtype already
        if _is_torch_xpu(array):
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
        if not _c_contiguous(iface["shape"], iface.get("strides")):
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
        return _ForeignPtr(t)

    def to_device(self, host: Any) -> USMArray:
        """A device copy of a host array, usable in place as a kernel input."""
        host = np.ascontiguousarray(host)
        return USMArray(self.upload(host), host.dtype, host.shape)

    def upload(self, host: np.ndarray):
        mem = dpctl().memory.MemoryUSMDevice(max(host.nbytes, 1), queue=self.queue)
        if host.nbytes:
            self.queue.memcpy(mem, host, host.nbytes)
        return mem

    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False):
        if like is not None and _is_torch_xpu(like):
            import torch

            t = torch.empty(count, dtype=getattr(torch, _TORCH_DTYPES[dtype]), device=like.device)
            if poison:
                t.view(torch.uint8).fill_(0xFF)
            return _ForeignPtr(t), t
        mem = dpctl().memory.MemoryUSMDevice(max(count * HOST_DTYPES[dtype].itemsize, 1), queue=self.queue)
        if poison:  # all-ones bytes: NaN in f32, f16 and bf16
            mem.memset(0xFF)
        return mem, USMArray(mem, HOST_DTYPES[dtype], (count,))

    def download(self, array: Any, dtype: str, count: int) -> np.ndarray:
        if isinstance(array, USMArray):
            array = array.mem
        host = np.empty(count, HOST_DTYPES[dtype])
        if host.nbytes:
            self.queue.memcpy(host, array, host.nbytes)  # in-order queue: after the kernels
        self._inflight.clear()
        return host

    def local_arg(self, ctype: str, count: int):
        if ctype not in _LOCAL_BYTES:
            raise QKGenValueError(f"ctype: local array of {ctype!r}; allowed: {', '.join(_LOCAL_BYTES)}")
        return sycl_native.LocalMem(_LOCAL_BYTES[ctype] * count)

    def launch(self, kernel, args: list, global_size: int, local_size: int):
        foreign = any(isinstance(a, _ForeignPtr) for a in args)
        if foreign:
            import torch

            torch.xpu.synchronize()  # torch's queue is not ours: its writes must land first
        ev = sycl_native.launch(self.queue, kernel, args, global_size, local_size)
        if foreign:
            ev.wait()  # and the caller goes on using the tensors on torch's queue
        # The event holds the arguments (e.g. uploaded inputs) alive until the queue is waited on.
        self._inflight.append(ev)
        if len(self._inflight) > 256:
            self.synchronize()
        return ev

    def synchronize(self) -> None:
        self.queue.wait()
        self._inflight.clear()

    def time_ms(self, kernel, args: list, global_size: int, local_size: int) -> float:
        return self.launch(kernel, args, global_size, local_size).elapsed_ns * 1e-6


BACKEND = SYCLBackend()
