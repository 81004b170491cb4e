"""CUDA backend: nvcc compiles (cuda_toolchain), pycuda and libcuda run (cuda_driver), torch /
GPUArray / __cuda_array_interface__ arrays go in and out as they are (cuda_arrays).

Context. Every device is used through its *primary* context, the one the CUDA runtime (and so
torch, cupy and numba) uses. Each piece of work pushes that context and pops it afterwards, which
leaves whatever was current (torch's, or pycuda.autoinit's) as it was, and keeps pycuda's context
stack empty between calls (pycuda aborts the process at exit if it is not). The stack is per
thread, so launches from several threads are safe.

Streams. A launch that touches a torch tensor goes on torch.cuda.current_stream() (ordered with
the torch work around it, and capturable in a CUDA graph); any other launch goes on the legacy
default stream, which orders it with pycuda's copies and memsets. A launch that mixes the two
synchronizes around itself. Warm API calls go through launcher(): a PackedLaunch with the parameters
packed once and torch's current stream looked up at each call (the capture stream in a graph).

Compilation. nvcc builds a cubin for the device's own sm_XY; cubins are cached on disk under a
key of source, flags, device, arch, nvcc version and driver version.
"""

from __future__ import annotations

import ctypes
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from ..errors import BackendUnavailable, BuildError
from ..kernels.target import Target
from .base import Backend, DeviceInfo, ceiling_bytes, copy_gbps, launch_shape, median_of, scalar_dtype
from .cuda_arrays import CUDAArrays, TorchPtr, torch_stream
from .cuda_driver import (CUDAError, DeviceBuffer, EventTimer, Kernel, PackedLaunch, driver, launch_kernel,
                          load_module, nvidia_driver_version)  # fmt: skip
from .cuda_toolchain import NVCC_FLAGS, find_nvcc, nvcc_build, nvcc_compile, nvcc_version  # noqa: F401
from .launch import groups, padded

_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38


def device_target(major: int, minor: int, name: str = "") -> Target:
    """The Target of a GPU of compute capability major.minor."""
    cc = (major, minor)
    return Target(name=f"cuda:{name}" if name else f"cuda-sm{major}{minor}", backend="cuda",
                  lang="CUDA C++17", fp16=cc >= (5, 3), bf16=cc >= (8, 0), subgroup_size=32,
                  subgroup_sizes=(32,), dot4=cc >= (6, 1), arch=f"sm_{major}{minor}",
                  mma=cc >= (8, 0), grid_dependency=cc >= (9, 0))  # fmt: skip


class CUDABackend(Backend):
    name = "cuda"

    def __init__(self):
        self._devices: list[DeviceInfo] | None = None

    def why_unavailable(self) -> str | None:
        why = super().why_unavailable()  # never raises
        if why is None and find_nvcc() is None:
            why = "nvcc not found (it compiles the kernels); put it on PATH or set CUDA_HOME"
        return why

    def devices(self) -> list[DeviceInfo]:
        if self._devices is None:
            drv, _ = driver()
            count = drv.Device.count()
            if count == 0:
                raise BackendUnavailable("cuda: no CUDA GPU")
            version = drv.get_driver_version()
            infos = []
            for i in range(count):
                d = drv.Device(i)
                major, minor = d.compute_capability()
                infos.append(DeviceInfo(
                    backend=self.name, index=i, name=d.name(), kind="gpu",
                    platform=f"CUDA {version // 1000}.{version % 1000 // 10}",
                    target=device_target(major, minor, d.name()),
                    details={"memory": f"{d.total_memory() / 2**30:.1f} GiB",
                             "SMs": d.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)},
                ))  # fmt: skip
            self._devices = infos
        return self._devices

    def _open(self, info: DeviceInfo) -> CUDADevice:
        return CUDADevice(info)


class CUDADevice(CUDAArrays):
    backend = "cuda"
    native_name = "torch CUDA tensors, pycuda GPUArrays or __cuda_array_interface__ arrays on this GPU"

    def __init__(self, info: DeviceInfo):
        super().__init__(info)
        self.drv, self.cu = driver()
        self.ordinal = info.index
        self.dev = self.drv.Device(info.index)
        self.arch = info.target.arch
        self.ctx = self.dev.retain_primary_context()
        self._identity: list[str] | None = None

    @contextmanager
    def _active(self):
        """The primary context current on this thread for the duration, then what was before. It is
        pushed even where the driver already has it current (torch's): pycuda's own calls need it on
        pycuda's context stack (skipping the push broke them on an H100: "no currently active context")."""
        self.ctx.push()
        try:
            yield
        finally:
            self.drv.Context.pop()

    # ---- compilation ----
    def identity(self) -> list[str]:
        if self._identity is None:
            driver_text = f"CUDA driver API {self.drv.get_driver_version()} {nvidia_driver_version()}".strip()
            self._identity = [self.info.name, self.arch, nvcc_version(), driver_text]
        return self._identity

    def build_options(self, ks) -> list[str]:
        return list(NVCC_FLAGS)

    def _build(self, ks, opts: list[str], key: str) -> Kernel:
        cubin = self.cache_load(key, ".cubin")
        if cubin is not None:
            try:
                return self._load(ks, cubin)
            except CUDAError:  # the driver refused a cubin whose digest matched: rebuild it
                self.cache_discard(key, ".cubin")
        cubin = nvcc_compile(ks.source, self.arch, opts, name=ks.name)
        try:
            kern = self._load(ks, cubin)
        except CUDAError as e:
            why = f"the driver rejected the {self.arch} cubin: {e}"
            raise BuildError("cuda", ks.name, why, ks.source) from None
        self.cache_store(key, ".cubin", cubin)
        return kern

    def compile_many(self, kss) -> list:
        """compile() for several kernels, with the missing cubins built by parallel nvcc runs."""
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            list(pool.map(self._cache_cubin, {ks.sha: ks for ks in kss}.values()))
        return [self.compile(ks) for ks in kss]

    def _cache_cubin(self, ks) -> None:
        opts = self.build_options(ks)
        key = self.disk_key(ks, opts)
        if self.cache_load(key, ".cubin") is None:
            self.cache_store(key, ".cubin", nvcc_compile(ks.source, self.arch, opts, name=ks.name))

    def _load(self, ks, cubin: bytes) -> Kernel:
        kinds = tuple(scalar_dtype(a) or a.kind for a in ks.args)
        with self._active():
            return load_module(self.cu, cubin, ks.name, kinds, programmatic=ks.grid_wait)

    # ---- launches ----
    def _stream(self, kernel: Kernel, args: list) -> tuple[int, bool]:
        """(stream handle, whether torch and non-torch memory meet in this launch)."""
        ptrs = [a for k, a in zip(kernel.kinds, args) if k in ("in", "out")]
        if not any(isinstance(p, TorchPtr) for p in ptrs):
            return 0, False
        import torch

        stream = torch.cuda.current_stream(self.ordinal).cuda_stream
        return stream, bool(stream) and not all(isinstance(p, TorchPtr) for p in ptrs)

    def _launch(self, kernel: Kernel, args: list, global_size, local_size, local_bytes: int,
                stream: int) -> None:  # fmt: skip
        g, loc = launch_shape(global_size, local_size)
        launch_kernel(self.cu, kernel, args, groups(g, loc), padded(loc), int(local_bytes), stream)

    def launch(self, kernel: Kernel, args: list, global_size, local_size, local_bytes: int = 0) -> None:
        """local_bytes: the launch's dynamic shared memory (extern __shared__ arrays)."""
        stream, mixed = self._stream(kernel, args)
        with self._active():
            if mixed:  # pycuda's copies and memsets ran on the legacy stream: finish them first
                self.cu("cuStreamSynchronize", ctypes.c_void_p(0))
            self._launch(kernel, args, global_size, local_size, local_bytes, stream)
            if mixed:  # pycuda memory is read on the legacy stream (or freed) from here on
                self.cu("cuStreamSynchronize", ctypes.c_void_p(stream))

    def launcher(self, kernel: Kernel, args: list, dynamic: tuple[int, ...], global_size, local_size,
                 local_bytes: int = 0):  # fmt: skip
        """A PackedLaunch on the stream launch() would pick for these arguments; launches mixing torch
        and other memory (which synchronize around themselves) keep going through launch()."""
        torchy = {isinstance(a, TorchPtr) for k, a in zip(kernel.kinds, args) if k in ("in", "out")}
        if len(torchy) > 1:
            return super().launcher(kernel, args, dynamic, global_size, local_size, local_bytes)
        g, loc = launch_shape(global_size, local_size)
        with self._active():  # a shared-memory opt-in is made in the context
            stream = torch_stream(self.ordinal) if True in torchy else None
            return PackedLaunch(self.cu, kernel, args, dynamic, groups(g, loc), padded(loc), int(local_bytes),
                                self.ctx.handle, stream)  # fmt: skip

    def synchronize(self) -> None:
        with self._active():
            self.drv.Context.synchronize()

    def time_ms(self, kernel: Kernel, args: list, global_size, local_size, local_bytes: int = 0) -> float:
        """Device time of one launch, by CUDA events on the stream the launch uses."""
        stream, _ = self._stream(kernel, args)
        with self._active(), EventTimer(self.cu, stream) as t:
            self._launch(kernel, args, global_size, local_size, local_bytes, stream)
        return t.ms

    # ---- what a benchmark needs to know ----
    def copy_ceiling(self, nbytes: int, iters: int = 20, warmup: int = 3) -> dict:
        """cuMemcpyDtoDAsync between two allocations on the legacy stream, timed by CUDA events."""
        with self._active():
            free, total = self.drv.mem_get_info()
            nbytes = ceiling_bytes(nbytes, free // 2, total)
            src, dst = (DeviceBuffer(self.cu, self.ctx.handle, nbytes) for _ in range(2))
            try:
                src.fill(1)
                dst.fill(0)

                def run() -> float:
                    with EventTimer(self.cu, 0) as t:
                        self.cu("cuMemcpyDtoDAsync_v2", ctypes.c_uint64(int(dst)), ctypes.c_uint64(int(src)),
                                ctypes.c_size_t(nbytes), ctypes.c_void_p(0))  # fmt: skip
                    return t.ms

                gbps = copy_gbps(nbytes, median_of(run, iters, warmup))
            finally:
                src.free()
                dst.free()
        return {"gbps": gbps, "method": "cuMemcpyDtoDAsync (libcuda), CUDA events", "buffer_bytes": nbytes,
                "all": {"cuMemcpyDtoDAsync": gbps}}  # fmt: skip

    def l2_bytes(self) -> int | None:
        return int(self.dev.get_attribute(self.drv.device_attribute.L2_CACHE_SIZE)) or None


BACKEND = CUDABackend()

