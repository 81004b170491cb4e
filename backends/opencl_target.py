"""An OpenCL device's Target, from what the device reports (never from its name).

lang: the device's OpenCL C version. fp16: cl_khr_fp16. Sub-groups: cl_khr_subgroups,
cl_intel_subgroups or the OpenCL C 3.0 feature __opencl_c_subgroups, at size 16 if the device
supports 16, else the largest supported size up to 32. The supported sizes come from
CL_DEVICE_SUB_GROUP_SIZES_INTEL (pyopencl does not expose it, so it is read through the loader
pyopencl itself uses); a device that has sub-groups but cannot say which sizes gets none: the
kernels' local-memory fallback is right on every device, a guessed size is not. dot4:
cl_khr_integer_dot_product, or on NVIDIA's OpenCL PTX dp4a (inline_ptx, compute capability 6.1 on).
registers: a GPU with Intel's sub-groups (cl_intel_subgroups) holds Intel's register file
(kernels.target.intel_gpu_registers); elsewhere 0, no limit.

inline_ptx: NVIDIA's own OpenCL compiler (the platform's vendor: no attribute names the compiler)
takes inline PTX; the device's compute capability (cl_nv_device_attribute_query) gives its arch,
and dp4a needs 6.1. From 7.0 its warps serve as sub-groups of 32 (PTX shfl.sync: the OpenCL
dialect's warp_ptx), though its OpenCL C has none. Another implementation on an NVIDIA GPU (pocl's
CUDA driver) gets neither.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re

from ..kernels.target import Target, intel_gpu_registers

CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
CL_DEVICE_TYPE_GPU = 1 << 2
_SUBGROUP_EXTENSIONS = ("cl_khr_subgroups", "cl_intel_subgroups")
_loader: ctypes.CDLL | None | bool = None


def opencl_c_version(dev) -> tuple[int, int]:
    m = re.search(r"OpenCL C (\d+)\.(\d+)", dev.opencl_c_version or "")
    return (int(m.group(1)), int(m.group(2))) if m else (1, 2)


def _features(dev) -> set[str]:
    try:  # OpenCL 3.0 devices list their optional language features; older ones raise
        return {getattr(f, "name", None) or f[0] for f in dev.opencl_c_features}
    except Exception:
        return set()


def _opencl_loader() -> ctypes.CDLL | None:
    """The libOpenCL pyopencl loaded (already mapped into this process), else pyopencl's bundled
    one, else the system's."""
    global _loader
    if _loader is None:
        _loader = False
        cands = []
        try:
            with open("/proc/self/maps") as f:
                cands += [line.split()[-1] for line in f if "libOpenCL" in line and "/" in line]
        except OSError:
            pass
        try:
            import pyopencl

            bundled = os.path.join(os.path.dirname(pyopencl.__file__), ".libs", "libOpenCL*")
            cands += sorted(glob.glob(bundled))
        except ImportError:
            pass
        cands.append("libOpenCL.so.1")
        for path in dict.fromkeys(cands):
            try:
                _loader = ctypes.CDLL(path)
                break
            except OSError:
                continue
    return _loader or None


def subgroup_sizes(dev) -> tuple[int, ...]:
    """The sub-group sizes the device supports, () when it does not say."""
    lib = _opencl_loader()
    if lib is None:
        return ()
    try:
        size = ctypes.c_size_t()
        handle, param = ctypes.c_void_p(dev.int_ptr), ctypes.c_uint(CL_DEVICE_SUB_GROUP_SIZES_INTEL)
        if lib.clGetDeviceInfo(handle, param, ctypes.c_size_t(0), None, ctypes.byref(size)) or not size.value:
            return ()
        buf = (ctypes.c_size_t * (size.value // ctypes.sizeof(ctypes.c_size_t)))()
        if lib.clGetDeviceInfo(handle, param, size, buf, None):
            return ()
        return tuple(sorted({int(s) for s in buf if 0 < s <= 1024 and not s & (s - 1)}))
    except Exception:  # an odd loader: no sizes, the fallback path
        return ()


def chosen_subgroup_size(sizes: tuple[int, ...]) -> int:
    """16 if supported (the kernels' tuned width), else the largest supported size up to 32."""
    return 16 if 16 in sizes else max((s for s in sizes if s <= 32), default=0)


def nvidia_compute_capability(dev, exts: set[str]) -> tuple[int, int] | None:
    """The compute capability of a device of NVIDIA's own OpenCL platform, through
    cl_nv_device_attribute_query; None elsewhere or when it cannot be read."""
    if "cl_nv_device_attribute_query" not in exts:
        return None
    try:
        if "NVIDIA" not in dev.platform.vendor:
            return None
        return int(dev.compute_capability_major_nv), int(dev.compute_capability_minor_nv)
    except Exception:  # a driver that lists the extension but fails the query: no PTX
        return None


def device_target(dev, name: str) -> Target:
    exts = set((dev.extensions or "").split())
    major, minor = opencl_c_version(dev)
    has_subgroups = bool(set(_SUBGROUP_EXTENSIONS) & exts) or "__opencl_c_subgroups" in _features(dev)
    sizes = subgroup_sizes(dev) if has_subgroups else ()
    cc = nvidia_compute_capability(dev, exts)
    if cc is not None and cc >= (7, 0) and not sizes:  # NVIDIA's own compiler: its warps, by PTX shuffles
        sizes = (32,)
    sg = chosen_subgroup_size(sizes)
    return Target(
        name=f"opencl:{name}",
        backend="opencl",
        lang=f"OpenCL C {major}.{minor}",
        fp16="cl_khr_fp16" in exts,
        bf16=False,
        subgroup_size=sg,
        subgroup_sizes=sizes,
        dot4="cl_khr_integer_dot_product" in exts or (cc is not None and cc >= (6, 1)),
        arch=f"sm_{cc[0]}{cc[1]}" if cc else "",
        inline_ptx=cc is not None,
        intel_subgroups="cl_intel_subgroups" in exts and sg > 0,
        mma=cc is not None and cc >= (8, 0) and 32 in sizes,  # PTX mma.sync, as on CUDA
        registers=intel_gpu_registers(sg) if _is_gpu(dev) and "cl_intel_subgroups" in exts else 0,
    )


def _is_gpu(dev) -> bool:
    try:
        return bool(int(dev.type) & CL_DEVICE_TYPE_GPU)
    except Exception:  # a device that cannot say: no register limit, the kernels as written
        return False
