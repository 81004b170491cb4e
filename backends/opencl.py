"""OpenCL backend through pyopencl: NVIDIA, Intel (GPU and CPU runtime), pocl, any ICD.

Device capabilities (OpenCL C version, fp16, sub-groups, integer dot product) become the
dialect's capabilities, so one template runs on OpenCL C 1.2 devices without fp16 or sub-groups
(NVIDIA, pocl) and on ones with both (Intel).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, BuildError, QKGenValueError
from .base import HOST_DTYPES, VECTOR_ALIGN, Backend, Device, DeviceInfo

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


def _opencl_c_version(dev) -> tuple[int, int]:
    m = re.search(r"OpenCL C (\d+)\.(\d+)", dev.opencl_c_version)
    return (int(m.group(1)), int(m.group(2))) if m else (1, 2)


def _caps(dev) -> dict:
    exts = set(dev.extensions.split())
    ver = _opencl_c_version(dev)
    # Intel reports sub-groups as cl_intel_subgroups / an OpenCL C 3.0 feature, not cl_khr_subgroups.
    features = set()
    try:
        features = {f[0] for f in dev.opencl_c_features}
    except Exception:
        pass
    subgroups = bool({"cl_khr_subgroups", "cl_intel_subgroups"} & exts or "__opencl_c_subgroups" in features)
    return {
        "fp16": "cl_khr_fp16" in exts,
        "subgroups": subgroups,
        "subgroup_size": 16 if subgroups else 0,
        "dot4": "cl_khr_integer_dot_product" in exts,
        "opencl_c": f"{ver[0]}.{ver[1]}",
    }


class OpenCLBackend(Backend):
    name = "opencl"

    def __init__(self):
        self._devices: list[DeviceInfo] | None = None
        self._raw: list[Any] = []

    def devices(self) -> list[DeviceInfo]:
        if self._devices is None:
            try:
                platforms = cl().get_platforms()
            except cl().LogicError as e:  # no ICD at all: an empty platform list
                raise BackendUnavailable(f"opencl: no OpenCL platform found ({e})") from None
            found = [(p, d) for p in platforms for d in p.get_devices()]
            # GPUs first; among CPUs, vendor runtimes before pocl (fp16 and sub-groups).
            found.sort(key=lambda pd: (_KIND_ORDER[_kind(pd[1])], "Portable" in pd[0].name))
            self._raw = [d for _, d in found]
            self._devices = [self._info(i, p, d) for i, (p, d) in enumerate(found)]
        return self._devices

    def _info(self, index: int, platform, dev) -> DeviceInfo:
        caps = _caps(dev)
        return DeviceInfo(
            backend=self.name, index=index, name=dev.name.strip(), kind=_kind(dev), platform=platform.name.strip(),
            caps=caps, details={"OpenCL C": caps["opencl_c"], "memory": f"{dev.global_mem_size / 2**30:.1f} GiB",
                                "driver": dev.driver_version},
        )  # fmt: skip

    def _open(self, info: DeviceInfo) -> OpenCLDevice:
        return OpenCLDevice(info, self._raw[info.index])


class OpenCLDevice(Device):
    backend = "opencl"
    native_name = "pyopencl.array.Array on this device's context"

    def __init__(self, info: DeviceInfo, dev):
        super().__init__(info)
        c = cl()
        self.dev = dev
        self.ctx = c.Context([dev])
        self.queue = c.CommandQueue(self.ctx, properties=c.command_queue_properties.PROFILING_ENABLE)
        self.caps_for_render = {k: v for k, v in info.caps.items() if k != "opencl_c"}

    @property
    def caps(self) -> dict:
        return self.caps_for_render

    def identity(self) -> list[str]:
        d = self.dev
        return [d.name, d.vendor, d.version, d.driver_version, d.platform.name, d.platform.version]

    def build_options(self, ks) -> list[str]:
        # Sub-group built-ins need OpenCL C 2.0+ on Intel; C 1.2 devices get the default.
        ver = self.info.caps["opencl_c"]
        opts = [f"-cl-std=CL{ver}"] if ver >= "2.0" else []
        # quantize_q8_1 divides (amax / 127, 1 / d) and must match the reference bit for bit.
        return opts + ["-cl-fp32-correctly-rounded-divide-sqrt"]

    def _build(self, ks, opts: list[str], key: str):
        c = cl()
        binary = self.cache_load(key, ".bin")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", c.CompilerWarning)  # vectorizer remarks, not problems
                if binary is not None:
                    prg = c.Program(self.ctx, [self.dev], [binary]).build(options=opts, cache_dir=False)
                else:
                    prg = c.Program(self.ctx, ks.source).build(options=opts, cache_dir=False)
                    self.cache_store(key, ".bin", bytes(prg.binaries[0]))
        except c.RuntimeError as e:  # pyopencl's message carries the device's build log
            raise BuildError("opencl", ks.name, str(e), ks.source) from None
        kern = getattr(prg, ks.name)
        kern.set_scalar_arg_dtypes([_scalar_dtype(a.kind) for a in ks.args])
        return kern

    # ---- memory ----
    def is_native(self, array: Any) -> bool:
        try:
            import pyopencl.array as cla
        except ImportError:
            return False
        return isinstance(array, cla.Array)

    def native_buffer(self, array: Any, name: str):
        if array.context != self.ctx:
            raise QKGenValueError(f"{name}: array lives on another OpenCL context/device; allowed: arrays "
                                  f"allocated on {self.info.name}")  # fmt: skip
        if not array.flags.c_contiguous:
            raise QKGenValueError(f"{name}: array is not contiguous; allowed: C-contiguous arrays")
        if array.offset == 0:
            return array.base_data
        align = self.dev.mem_base_addr_align // 8
        if array.offset % max(align, VECTOR_ALIGN):
            raise QKGenValueError(f"{name}: array starts at offset {array.offset}; allowed: multiples of "
                                  f"{max(align, VECTOR_ALIGN)} bytes")  # fmt: skip
        return array.base_data.get_sub_region(array.offset, array.nbytes)

    def upload(self, host: np.ndarray):
        c = cl()
        flags = c.mem_flags.READ_ONLY | c.mem_flags.COPY_HOST_PTR
        return c.Buffer(self.ctx, flags, hostbuf=host if host.nbytes else np.zeros(1, np.uint8))

    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False):
        import pyopencl.array as cla

        arr = cla.empty(self.queue, (count,), HOST_DTYPES[dtype])
        if poison:  # all-ones bytes: NaN in f32, f16 and bf16
            cl().enqueue_fill_buffer(self.queue, arr.base_data, np.uint8(0xFF), 0, arr.nbytes)
        return arr.base_data, arr

    def download(self, array: Any, dtype: str, count: int) -> np.ndarray:
        return array.get(queue=self.queue)

    def launch(self, kernel, args: list, global_size: int, local_size: int):
        return kernel(self.queue, (global_size,), (local_size,), *args)

    def synchronize(self) -> None:
        self.queue.finish()

    def time_ms(self, kernel, args: list, global_size: int, local_size: int) -> float:
        ev = self.launch(kernel, args, global_size, local_size)
        ev.wait()
        return (ev.profile.end - ev.profile.start) * 1e-6


def _scalar_dtype(kind: str):
    return {"u32": np.uint32, "f32": np.float32}.get(kind)


BACKEND = OpenCLBackend()
