"""CUDA backend: nvcc compiles, pycuda holds devices, contexts and memory, libcuda launches.

Context. Every device is used through its *primary* context, the one the CUDA runtime (and so
torch, cupy and numba) uses: a torch tensor's data_ptr() is then simply a kernel argument, with
no copy and no peer mapping. Each piece of work pushes that context and pops it afterwards, which
leaves whatever was current (torch's, or pycuda.autoinit's) as it was, and keeps pycuda's context
stack empty between calls (pycuda aborts the process at exit if it is not).

Streams. pycuda can neither wrap a foreign stream handle nor hand out a kernel's CUfunction, so
modules are loaded and kernels launched with cuModuleLoadData / cuLaunchKernel from libcuda
itself, through ctypes: the same library pycuda is linked to, so one driver state. A launch that
touches a torch tensor goes on torch.cuda.current_stream() (ordered with the torch work around it,
and capturable in a CUDA graph); any other launch goes on the legacy default stream, which orders
it with pycuda's copies and memsets. A launch that mixes the two synchronizes around itself.

Compilation. nvcc (found on $CUDA_HOME, $CUDA_PATH, PATH or /usr/local/cuda) builds a cubin for
the device's own sm_XY; cubins are cached on disk under a key of source, flags, device, arch,
nvcc version and driver version, so a second process loads instead of compiling.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, BuildError, QKGenError, QKGenValueError
from .base import HOST_DTYPES, VECTOR_ALIGN, Backend, Device, DeviceInfo

# fmad stays at nvcc's default (on): the templates round with __fmul_rn/__fadd_rn where it matters.
NVCC_FLAGS = ("-O3", "-std=c++17")
_LIBCUDA = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"
_CU_POINTER_ATTRIBUTE_CONTEXT, _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 1, 9


class CUDAError(QKGenError, RuntimeError):
    """A CUDA driver call made through libcuda failed."""

    def __init__(self, call: str, code: int, text: str):
        self.call, self.code = call, code
        super().__init__(f"cuda: {call} failed: {text}")


# ---- nvcc: a pure function of (source, arch, flags) ----


def find_nvcc() -> str | None:
    """Path of nvcc, or None. Never raises."""
    exe = "nvcc.exe" if os.name == "nt" else "nvcc"
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if root and os.path.isfile(os.path.join(root, "bin", exe)):
            return os.path.join(root, "bin", exe)
    found = shutil.which(exe)
    if found:
        return found
    default = os.path.join("/usr/local/cuda/bin", exe)
    return default if os.path.isfile(default) else None


@functools.cache
def nvcc_version(nvcc: str | None = None) -> str:
    """nvcc's release and build lines (part of every cache key), or "nvcc not found"."""
    nvcc = nvcc or find_nvcc()
    if not nvcc:
        return "nvcc not found"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvcc unusable: {e}"
    return " ".join(line for line in out.stdout.splitlines() if "release" in line or line.startswith("Build"))


def _sm(arch: Any) -> str:
    m = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3}[af]?)", str(arch))
    if not m:
        raise QKGenValueError(f"arch: {arch!r} is not a CUDA architecture; allowed: e.g. sm_80, sm_90, 90")
    return m.group(1)


@dataclass(frozen=True)
class NvccOutput:
    binary: bytes  # a cubin for one architecture, a fatbin for several
    log: str  # what nvcc printed (warnings); messages about the source name `<name>.cu`


def nvcc_build(source: str, arches: Any, options: Any = NVCC_FLAGS, name: str = "kernel") -> NvccOutput:
    """Compile CUDA C++ with the nvcc executable: one arch gives a cubin, several one fatbin
    (a single nvcc call). Raises BuildError with nvcc's output when it fails."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise BackendUnavailable("cuda: nvcc not found; put it on PATH or set CUDA_HOME")
    sms = [_sm(a) for a in ([arches] if isinstance(arches, (str, int)) else arches)]
    if len(sms) == 1:
        target, suffix = ["-cubin", f"-arch=sm_{sms[0]}"], ".cubin"
    else:
        target, suffix = ["-fatbin", *(f"-gencode=arch=compute_{a},code=sm_{a}" for a in sms)], ".fatbin"
    with tempfile.TemporaryDirectory(prefix="qkgen-nvcc-") as tmp:
        # Relative names in a private folder: messages read "<name>.cu(12): warning ...".
        Path(tmp, name + ".cu").write_text(source, encoding="utf-8")
        cmd = [nvcc, *target, *options, "-o", name + suffix, name + ".cu"]
        try:
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        except OSError as e:
            raise BackendUnavailable(f"cuda: cannot run {nvcc}: {e}") from None
        log = (r.stdout + r.stderr).strip()
        if r.returncode != 0:
            raise BuildError("cuda", name, f"$ {' '.join(cmd[1:])}\n{log}", source)
        return NvccOutput(Path(tmp, name + suffix).read_bytes(), log)


def nvcc_compile(source: str, arch: str, options: Any = NVCC_FLAGS, name: str = "kernel") -> bytes:
    """The cubin of `source` for one architecture (e.g. "sm_90")."""
    return nvcc_build(source, [arch], options, name).binary


def device_caps(major: int, minor: int) -> dict:
    """Dialect capabilities of a GPU of compute capability major.minor."""
    return {"fp16": True, "subgroups": True, "subgroup_size": 32, "dot4": (major, minor) >= (6, 1)}


# ---- the driver: pycuda plus the few libcuda calls it does not expose ----


class _LibCuda:
    def __init__(self, lib: ctypes.CDLL):
        self._lib = lib

    def __call__(self, fn: str, *args) -> None:
        rc = getattr(self._lib, fn)(*args)
        if rc != 0:
            raise CUDAError(fn, rc, self.describe(rc))

    def describe(self, rc: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self._lib.cuGetErrorName(rc, ctypes.byref(name))
        self._lib.cuGetErrorString(rc, ctypes.byref(text))
        return f"{(name.value or b'CUDA error %d' % rc).decode()}: {(text.value or b'').decode()}"


_driver_cache: tuple[Any, _LibCuda] | None = None


def _driver() -> tuple[Any, _LibCuda]:
    """(pycuda.driver, libcuda), loaded and initialised once; BackendUnavailable says why not."""
    global _driver_cache
    if _driver_cache is None:
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
            raise BackendUnavailable(
                f"cuda: pycuda cannot be imported ({e}); is it built for this driver?"
            ) from None
        try:
            drv.init()
        except drv.Error as e:
            if "no CUDA-capable device" in str(e):
                raise BackendUnavailable(f"cuda: no CUDA GPU ({e})") from None
            raise BackendUnavailable(f"cuda: the CUDA driver failed to initialise ({e})") from None
        _driver_cache = (drv, _LibCuda(lib))
    return _driver_cache


def _nvidia_driver_version() -> str:
    try:  # Linux; elsewhere the CUDA driver API version alone identifies the driver
        return Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""


class CUDABackend(Backend):
    name = "cuda"

    def __init__(self):
        self._devices: list[DeviceInfo] | None = None

    def why_unavailable(self) -> str | None:
        why = super().why_unavailable()  # never raises
        if why is None and find_nvcc() is None:
            why = "cuda: nvcc not found (it compiles the kernels); put it on PATH or set CUDA_HOME"
        return why

    def devices(self) -> list[DeviceInfo]:
        if self._devices is None:
            drv, _ = _driver()
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
                    platform=f"CUDA {version // 1000}.{version % 1000 // 10}", caps=device_caps(major, minor),
                    details={"compute capability": f"{major}.{minor}",
                             "memory": f"{d.total_memory() / 2**30:.1f} GiB",
                             "SMs": d.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)},
                ))  # fmt: skip
            self._devices = infos
        return self._devices

    def _open(self, info: DeviceInfo) -> CUDADevice:
        return CUDADevice(info)


# ---- arrays ----


class _TorchPtr(int):
    """A device address owned by torch: launches that use one go on torch's current stream."""


def _torch_tensor(a: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def _gpuarray(a: Any) -> bool:
    mod = sys.modules.get("pycuda.gpuarray")
    return mod is not None and isinstance(a, mod.GPUArray)


def _cuda_array_interface(a: Any) -> dict | None:
    if isinstance(a, np.ndarray):
        return None
    try:
        cai = getattr(a, "__cuda_array_interface__", None)
    except Exception:  # noqa: BLE001 (a CPU tensor of some framework may refuse the attribute)
        return None
    return cai if isinstance(cai, dict) else None


def _c_contiguous(shape: tuple, strides: tuple | None, itemsize: int) -> bool:
    if strides is None:
        return True
    want = itemsize
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != want:
            return False
        want *= size
    return True


@dataclass
class _Kernel:
    name: str
    module: ctypes.c_void_p  # never unloaded: a device keeps its kernels for the process's life
    func: ctypes.c_void_p
    kinds: tuple[str, ...]  # per argument: "in"/"out" (pointer), "u32", "f32"


class CUDADevice(Device):
    backend = "cuda"
    native_name = "torch CUDA tensors, pycuda GPUArrays or __cuda_array_interface__ arrays on this GPU"

    def __init__(self, info: DeviceInfo):
        super().__init__(info)
        self.drv, self.cu = _driver()
        self.ordinal = info.index
        self.dev = self.drv.Device(info.index)
        major, minor = self.dev.compute_capability()
        self.arch = f"sm_{major}{minor}"
        self.ctx = self.dev.retain_primary_context()
        self._identity: list[str] | None = None

    @contextmanager
    def _active(self):
        """The primary context current on this thread for the duration, then what was before."""
        self.ctx.push()
        try:
            yield
        finally:
            self.drv.Context.pop()

    # ---- compilation ----
    def identity(self) -> list[str]:
        if self._identity is None:
            driver = f"CUDA driver API {self.drv.get_driver_version()} {_nvidia_driver_version()}".strip()
            self._identity = [self.info.name, self.arch, nvcc_version(), driver]
        return self._identity

    def build_options(self, ks) -> list[str]:
        return list(NVCC_FLAGS)

    def _build(self, ks, opts: list[str], key: str) -> _Kernel:
        cubin = self.cache_load(key, ".cubin")
        if cubin is not None:
            try:
                return self._load(ks, cubin)
            except CUDAError:
                pass  # a damaged cache entry: build it again
        cubin = nvcc_compile(ks.source, self.arch, opts, name=ks.name)
        try:
            kern = self._load(ks, cubin)
        except CUDAError as e:
            raise BuildError(
                "cuda", ks.name, f"the driver rejected the {self.arch} cubin: {e}", ks.source
            ) from None
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

    def _load(self, ks, cubin: bytes) -> _Kernel:
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        with self._active():
            self.cu("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(cubin))
            self.cu("cuModuleGetFunction", ctypes.byref(func), module, ks.name.encode())
        return _Kernel(ks.name, module, func, tuple(a.kind for a in ks.args))

    # ---- inputs ----
    def is_native(self, array: Any) -> bool:
        if _torch_tensor(array):
            return array.is_cuda
        return _gpuarray(array) or _cuda_array_interface(array) is not None

    def as_input(self, array: Any, name: str, dtypes: tuple[str, ...]) -> Any:
        if _torch_tensor(array) and not array.is_cuda:
            raise self._cpu_tensor_error(array, name)
        if self.is_native(array):
            return self._native(array, name, dtypes)
        return super().as_input(array, name, dtypes)  # numpy: copied in

    def native_buffer(self, array: Any, name: str) -> Any:
        return self._native(array, name, None)

    def _cpu_tensor_error(self, t: Any, name: str) -> QKGenValueError:
        return QKGenValueError(
            f"{name}: torch tensor is on {t.device}; allowed: CUDA tensors on cuda:{self.ordinal} or numpy "
            f"arrays: move it with .cuda({self.ordinal}) or pass .numpy()"
        )

    def _native(self, a: Any, name: str, dtypes: tuple[str, ...] | None) -> int:
        if _torch_tensor(a):
            if a.device.index != self.ordinal:
                raise self._other_gpu(name, f"cuda:{a.device.index}")
            dt = str(a.dtype).replace("torch.", "")
            return _TorchPtr(self._checked(name, a.data_ptr(), dt, a.is_contiguous(), dtypes))
        if _gpuarray(a):
            ptr, dt, contiguous = int(a.gpudata), a.dtype.name, bool(a.flags.c_contiguous)
            stream = None
        else:
            cai = _cuda_array_interface(a)
            ptr, typ = int(cai["data"][0]), np.dtype(cai["typestr"])
            dt, contiguous = typ.name, _c_contiguous(tuple(cai["shape"]), cai.get("strides"), typ.itemsize)
            stream = cai.get("stream")
        ptr = self._checked(name, ptr, dt, contiguous, dtypes)
        with self._active():
            self._check_owner(name, ptr)
            if stream:  # __cuda_array_interface__ v3: the producer's stream must be done with it
                self.cu("cuStreamSynchronize", ctypes.c_void_p(int(stream)))
        return ptr

    def _checked(self, name: str, ptr: int, dtype: str, contiguous: bool, dtypes: tuple | None) -> int:
        if dtypes and dtype not in dtypes:
            raise QKGenValueError(f"{name}: dtype {dtype}; allowed: {', '.join(dtypes)}")
        if not contiguous:
            raise QKGenValueError(
                f"{name}: array is not contiguous; allowed: C-contiguous arrays (.contiguous())"
            )
        if ptr % VECTOR_ALIGN:
            raise QKGenValueError(
                f"{name}: misaligned: starts at address 0x{ptr:x}, {ptr % VECTOR_ALIGN} bytes past a "
                f"{VECTOR_ALIGN}-byte boundary; allowed: {VECTOR_ALIGN}-byte aligned buffers (a fresh "
                "allocation or .clone(), not a view at an offset)"
            )
        return ptr

    def _other_gpu(self, name: str, where: str) -> QKGenValueError:
        return QKGenValueError(f"{name}: array is on another GPU ({where}); allowed: arrays on "
                               f"cuda:{self.ordinal} ({self.info.name})")  # fmt: skip

    def _check_owner(self, name: str, ptr: int) -> None:
        """Non-torch memory: it must be device memory of this GPU's primary context."""
        ordinal, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64(ptr)
        try:
            self.cu("cuPointerGetAttribute", ctypes.byref(ordinal), _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)
            self.cu("cuPointerGetAttribute", ctypes.byref(ctx), _CU_POINTER_ATTRIBUTE_CONTEXT, p)
        except CUDAError as e:
            raise QKGenValueError(
                f"{name}: 0x{ptr:x} is not CUDA memory ({e}); allowed: device arrays"
            ) from None
        if ordinal.value != self.ordinal:
            raise self._other_gpu(name, f"cuda:{ordinal.value}")
        if ctx.value and ctx.value != self.ctx.handle:
            raise QKGenValueError(
                f"{name}: array belongs to another CUDA context on this GPU (pycuda.autoinit's?); allowed: "
                "memory of the primary context (torch, cupy, or pycuda after Device.retain_primary_context())"
            )

    def upload(self, host: np.ndarray):
        with self._active():
            buf = self.drv.mem_alloc(max(host.nbytes, 1))
            if host.nbytes:
                self.drv.memcpy_htod(buf, host)
        return buf

    # ---- outputs ----
    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False) -> tuple[Any, Any]:
        nbytes = count * HOST_DTYPES[dtype].itemsize
        if _torch_tensor(like):
            import torch

            if not like.is_cuda:
                raise self._cpu_tensor_error(like, "data")
            if like.device.index != self.ordinal:
                raise self._other_gpu("data", str(like.device))
            dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
            out = torch.empty(count, dtype=dt, device=like.device)
            if poison:  # all-ones bytes: NaN in f32, f16 and bf16
                out.view(torch.uint8).fill_(0xFF)
            return _TorchPtr(out.data_ptr()), out
        with self._active():
            if like is not None and self.is_native(like):  # GPUArray or another CUDA array: a GPUArray
                from pycuda import gpuarray

                out = gpuarray.empty((count,), HOST_DTYPES[dtype])
                buf = out.gpudata
            else:
                out = buf = self.drv.mem_alloc(nbytes)
            if poison:
                self.drv.memset_d8(buf, 0xFF, nbytes)
        return buf, out

    def download(self, array: Any, dtype: str, count: int) -> np.ndarray:
        if _torch_tensor(array):
            import torch

            t = array.detach().cpu()
            return t.view(torch.int16).numpy().view(np.uint16) if dtype == "bf16" else t.numpy()
        with self._active():
            if _gpuarray(array):
                return array.get()
            host = np.empty(count, HOST_DTYPES[dtype])
            self.drv.memcpy_dtoh(host, array)
        return host

    # ---- launches ----
    def _stream(self, kernel: _Kernel, args: list) -> tuple[int, bool]:
        """(stream handle, whether torch and non-torch memory meet in this launch)."""
        ptrs = [a for k, a in zip(kernel.kinds, args) if k in ("in", "out")]
        if not any(isinstance(p, _TorchPtr) for p in ptrs):
            return 0, False
        import torch

        stream = torch.cuda.current_stream(self.ordinal).cuda_stream
        return stream, bool(stream) and not all(isinstance(p, _TorchPtr) for p in ptrs)

    def _launch(self, kernel: _Kernel, args: list, global_size: int, local_size: int, stream: int) -> None:
        if len(args) != len(kernel.kinds):
            raise QKGenValueError(f"args: {kernel.name} takes {len(kernel.kinds)} arguments, got {len(args)}")
        groups = global_size // local_size if local_size > 0 else 0
        if groups <= 0 or global_size % local_size or groups >= 2**31:
            raise QKGenValueError(f"global_size: {global_size} must be a positive multiple of local_size "
                                  f"{local_size}, below 2**31 groups")  # fmt: skip
        vals = []
        for i, (kind, a) in enumerate(zip(kernel.kinds, args)):
            if kind == "f32":
                vals.append(ctypes.c_float(float(a)))
            elif kind == "u32":
                if not 0 <= int(a) < 2**32:
                    raise QKGenValueError(f"args[{i}]: {a} does not fit a u32 argument of {kernel.name}")
                vals.append(ctypes.c_uint32(int(a)))
            else:
                vals.append(ctypes.c_uint64(int(a)))
        params = (ctypes.c_void_p * len(vals))(*(ctypes.addressof(v) for v in vals))
        grid, block, one = ctypes.c_uint(groups), ctypes.c_uint(local_size), ctypes.c_uint(1)
        shared = ctypes.c_uint(0)  # the kernels' local arrays are static __shared__
        stream_h = ctypes.c_void_p(stream)
        self.cu(
            "cuLaunchKernel", kernel.func, grid, one, one, block, one, one, shared, stream_h, params, None
        )

    def launch(self, kernel: _Kernel, args: list, global_size: int, local_size: int) -> None:
        stream, mixed = self._stream(kernel, args)
        with self._active():
            if mixed:  # pycuda's copies and memsets ran on the legacy stream: finish them first
                self.cu("cuStreamSynchronize", ctypes.c_void_p(0))
            self._launch(kernel, args, global_size, local_size, stream)
            if mixed:  # pycuda memory is read on the legacy stream (or freed) from here on
                self.cu("cuStreamSynchronize", ctypes.c_void_p(stream))

    def synchronize(self) -> None:
        with self._active():
            self.drv.Context.synchronize()

    def time_ms(self, kernel: _Kernel, args: list, global_size: int, local_size: int) -> float:
        """Device time of one launch, by CUDA events on the stream the launch uses."""
        stream, _ = self._stream(kernel, args)
        start, end, ms = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_float()
        with self._active():
            self.cu("cuEventCreate", ctypes.byref(start), 0)
            self.cu("cuEventCreate", ctypes.byref(end), 0)
            try:
                self.cu("cuEventRecord", start, ctypes.c_void_p(stream))
                self._launch(kernel, args, global_size, local_size, stream)
                self.cu("cuEventRecord", end, ctypes.c_void_p(stream))
                self.cu("cuEventSynchronize", end)
                self.cu("cuEventElapsedTime", ctypes.byref(ms), start, end)
            finally:
                self.cu("cuEventDestroy_v2", start)
                self.cu("cuEventDestroy_v2", end)
        return ms.value


BACKEND = CUDABackend()
