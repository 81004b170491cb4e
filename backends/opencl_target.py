"""An OpenCL device's Target, from what the device reports (never from its name).

lang: the device's OpenCL C version. fp16: cl_khr_fp16. Sub-groups: cl_khr_subgroups,
cl_intel_subgroups or the OpenCL C 3.0 feature __opencl_c_subgroups, at size 16 if the device
supports 16, else the largest supported size up to 32. The supported sizes come from
CL_DEVICE_SUB_GROUP_SIZES_INTEL (pyopencl does not expose it, so it is read through the loader
pyopencl itself uses); a device that has sub-groups but cannot say which sizes gets none: the
kernels' local-memory fallback is right on every device, a guessed size is not. dot4:
cl_khr_integer_dot_product.
"""

from __future__ import annotations

import ctypes
import glob
import os
import re

from ..kernels.target import Target

CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
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


def device_target(dev, name: str) -> Target:
    exts = set((dev.extensions or "").split())
    major, minor = opencl_c_version(dev)
    has_subgroups = bool(set(_SUBGROUP_EXTENSIONS) & exts) or "__opencl_c_subgroups" in _features(dev)
    sizes = subgroup_sizes(dev) if has_subgroups else ()
    return Target(
        name=f"opencl:{name}",
        backend="opencl",
        lang=f"OpenCL C {major}.{minor}",
        fp16="cl_khr_fp16" in exts,
        bf16=False,
        subgroup_size=chosen_subgroup_size(sizes),
        subgroup_sizes=sizes,
        dot4="cl_khr_integer_dot_product" in exts,
    )
