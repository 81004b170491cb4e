"""Typed targets: what a device can do, as one frozen record.

A Target holds capabilities only (language version, fp16/bf16 arithmetic, sub-groups and their
size, a native 4-way int8 dot product, inline PTX, the architecture); the dialect of its backend holds the
spellings. Every device builds its own Target (backends/*), and PROFILES name the common ones so
that kernels render without a device (`qkgen dump --target cuda-sm90`, the compile matrix).
Rendering depends on the target's capabilities, never on its name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from types import MappingProxyType

BACKENDS = ("cuda", "sycl", "opencl")


@dataclass(frozen=True)
class Target:
    name: str  # a profile name, or "<backend>:<device name>" for a device's own target
    backend: str  # "cuda" | "sycl" | "opencl"
    lang: str  # language version: "CUDA C++17", "OpenCL C 1.2", "OpenCL C 3.0", "SYCL 2020"
    fp16: bool  # fp16 arithmetic (half loads/stores work everywhere; this is about math)
    bf16: bool  # native bf16 conversions
    subgroup_size: int  # lanes of the sub-group kernels are written for; 0: no sub-groups
    subgroup_sizes: tuple[int, ...] = ()  # the sizes the device supports (a required size must be one)
    dot4: bool = False  # a native 4-way int8 dot product (dp4a, cl_khr_integer_dot_product)
    arch: str = ""  # "sm_90", "dg2", ...: what a compiler is asked to build for
    # The OpenCL C compiler takes NVIDIA inline PTX (asm statements): NVIDIA's OpenCL, which has no
    # cl_khr_integer_dot_product, then spells dot4 as PTX dp4a. CUDA has intrinsics and leaves it off.
    inline_ptx: bool = False
    # cl_intel_subgroups (Intel's OpenCL on its CPUs and GPUs): sub-group shuffles, so a reduction over
    # part of a sub-group needs no local memory (intel_sub_group_shuffle_xor)
    intel_subgroups: bool = False
    # Warp matrix multiply-accumulate: a 32-lane warp multiplies f16 fragments [16 x 16] . [16 x 8]
    # into f32 (PTX mma.sync m16n8k16, sm_80 on; on NVIDIA's OpenCL as inline PTX). Without it the
    # product goes through local memory.
    mma: bool = False
    # Programmatic dependent launch (CUDA sm_90 on): a kernel launched so may start before the grid
    # before it in its stream ends, and waits for that grid in-kernel (PTX griddepcontrol) before it
    # reads what that grid wrote; the grid before it lets it start early.
    grid_dependency: bool = False
    # The 32-bit registers a work-item may hold before its compiler keeps arrays in memory instead
    # (0: enough for every kernel as written, as on CUDA's 255 a thread and on CPUs). An Intel GPU
    # thread has 128 registers of 32 bytes (4 KB) for all its lanes: 64 a work-item at sub-group
    # 16, 32 at 32. Kernels that keep many values a lane (the GEMV's rows decoded once for every
    # activation row) take fewer rows where this is small.
    registers: int = 0

    def __post_init__(self) -> None:
        from ..errors import QKGenValueError

        if self.backend not in BACKENDS:
            raise QKGenValueError(f"target.backend: {self.backend!r}; allowed: {', '.join(BACKENDS)}")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "bool" and not isinstance(v, bool):
                raise QKGenValueError(f"target.{f.name}: {v!r} must be a bool")
            if f.type == "str" and not (isinstance(v, str) and "*/" not in v and "\n" not in v):
                raise QKGenValueError(f"target.{f.name}: {v!r} must be one line of text without '*/'")
        if not isinstance(self.subgroup_size, int) or self.subgroup_size < 0 or self.subgroup_size & (
            self.subgroup_size - 1
        ):  # fmt: skip
            raise QKGenValueError(f"target.subgroup_size: {self.subgroup_size!r}; allowed: 0 or a power of two")
        if self.mma and not (self.backend == "cuda" or self.inline_ptx and self.subgroup_size == 32):
            raise QKGenValueError(f"target.mma: only for CUDA targets and OpenCL ones with inline PTX and warps "
                                  f"(PTX mma.sync), not {self.backend}")  # fmt: skip
        if self.grid_dependency and self.backend != "cuda":
            raise QKGenValueError(f"target.grid_dependency: only for CUDA targets (sm_90 on), not {self.backend}")
        if self.inline_ptx and self.backend != "opencl":
            raise QKGenValueError(f"target.inline_ptx: only for OpenCL targets (NVIDIA's OpenCL), not {self.backend}")
        if not isinstance(self.registers, int) or isinstance(self.registers, bool) or self.registers < 0:
            raise QKGenValueError(f"target.registers: {self.registers!r}; allowed: an int >= 0 (0: no limit)")
        if self.subgroup_size and self.subgroup_sizes and self.subgroup_size not in self.subgroup_sizes:
            raise QKGenValueError(f"target.subgroup_size: {self.subgroup_size} is not one of the device's "
                                  f"sub-group sizes {self.subgroup_sizes}")  # fmt: skip

    @property
    def subgroups(self) -> bool:
        return self.subgroup_size > 0

    @property
    def few_registers(self) -> bool:
        """A register file small enough (registers set, under CUDA's 128) that the ops' defaults keep
        fewer values a lane."""
        return 0 < self.registers < 128

    def caps(self) -> dict[str, object]:
        """The capabilities that change generated source, for headers and listings (inline_ptx,
        intel_subgroups, mma, grid_dependency and registers only where set, so the targets without them
        keep their header line)."""
        caps = {"fp16": self.fp16, "bf16": self.bf16, "subgroup_size": self.subgroup_size, "dot4": self.dot4}
        flags = ("inline_ptx", "intel_subgroups", "mma", "grid_dependency")
        caps.update({k: True for k in flags if getattr(self, k)})
        return {**caps, **({"registers": self.registers} if self.registers else {})}

    def describe(self) -> str:
        """One line: name, language and capabilities (the generated file's header uses it)."""
        caps = " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in self.caps().items())
        arch = f" arch={self.arch}" if self.arch else ""
        return f"{self.name} ({self.lang}{arch}) {caps}"

    def with_name(self, name: str) -> Target:
        return replace(self, name=name)


def _cuda(sm: int) -> Target:
    # Every sm_XY from 6.1 has dp4a and fp16 arithmetic; bf16 conversions and f16 mma from sm_80;
    # programmatic dependent launch from sm_90.
    return Target(f"cuda-sm{sm}", "cuda", "CUDA C++17", fp16=True, bf16=sm >= 80, subgroup_size=32,
                  subgroup_sizes=(32,), dot4=True, arch=f"sm_{sm}", mma=sm >= 80,
                  grid_dependency=sm >= 90)  # fmt: skip


def intel_gpu_registers(subgroup_size: int) -> int:
    """The registers a work-item of an Intel GPU may hold (Target.registers) at this sub-group size:
    128 registers of 32 bytes a hardware thread (Gen9 to Xe-HPG; Xe-HPC has twice the bytes, and
    gets this lower count), shared by its lanes."""
    return 128 * 32 // (4 * subgroup_size) if subgroup_size else 0


_PROFILES = (
    *(_cuda(sm) for sm in (80, 86, 89, 90, 100, 120)),
    # NVIDIA's OpenCL: C 1.2, no cl_khr_fp16 arithmetic, no sub-groups, no integer dot product (what
    # the C 1.2 language alone gives: the portable byte products; the device itself also takes PTX).
    Target("opencl-nvidia", "opencl", "OpenCL C 1.2", fp16=False, bf16=False, subgroup_size=0),
    # The same on an H100 as its device target reads it (cl_nv_device_attribute_query: compute
    # capability 9.0): NVIDIA's compiler takes inline PTX, so the int8 dot product is PTX dp4a (sm_61+)
    # and its warps are sub-groups of 32 through PTX shuffles (sm_70+).
    Target("opencl-nvidia-sm90", "opencl", "OpenCL C 1.2", fp16=False, bf16=False, subgroup_size=32,
           subgroup_sizes=(32,), dot4=True, arch="sm_90", inline_ptx=True, mma=True),  # fmt: skip
    # Intel's CPU OpenCL runtime (pip intel-opencl-rt): C 3.0, fp16, sub-groups 4..64, int8 dot.
    Target("opencl-intel-cpu", "opencl", "OpenCL C 3.0", fp16=True, bf16=False, subgroup_size=16,
           subgroup_sizes=(4, 8, 16, 32, 64), dot4=True, intel_subgroups=True),  # fmt: skip
    # Intel Arc / Data Center GPUs through OpenCL: sub-group 16 is the native width.
    Target("opencl-intel-gpu", "opencl", "OpenCL C 3.0", fp16=True, bf16=False, subgroup_size=16,
           subgroup_sizes=(16, 32), dot4=True, intel_subgroups=True,
           registers=intel_gpu_registers(16)),  # fmt: skip
    # Sub-group 32 without the int8 dot built-in: Intel's compiler (IGC 1.0.12504) makes it a stack
    # call, and a kernel with stack calls drops to SIMD16 on dg2/tgllp, breaking a 32-lane kernel.
    Target("opencl-intel-gpu-sg32", "opencl", "OpenCL C 3.0", fp16=True, bf16=False, subgroup_size=32,
           subgroup_sizes=(16, 32), dot4=False, intel_subgroups=True,
           registers=intel_gpu_registers(32)),  # fmt: skip
    Target("pocl", "opencl", "OpenCL C 1.2", fp16=False, bf16=False, subgroup_size=0),
    Target("sycl-intel-gpu", "sycl", "SYCL 2020", fp16=True, bf16=False, subgroup_size=16, subgroup_sizes=(16, 32),
           registers=intel_gpu_registers(16)),  # fmt: skip
    Target("sycl-intel-gpu-sg32", "sycl", "SYCL 2020", fp16=True, bf16=False, subgroup_size=32,
           subgroup_sizes=(16, 32), registers=intel_gpu_registers(32)),  # fmt: skip
    Target("sycl-cpu", "sycl", "SYCL 2020", fp16=True, bf16=False, subgroup_size=16,
           subgroup_sizes=(4, 8, 16, 32, 64)),  # fmt: skip
)
PROFILES: MappingProxyType[str, Target] = MappingProxyType({t.name: t for t in _PROFILES})

# The profile a backend name alone stands for (render(..., "cuda"), `qkgen dump --backend`).
DEFAULT_PROFILE = MappingProxyType({"cuda": "cuda-sm80", "opencl": "opencl-intel-gpu", "sycl": "sycl-intel-gpu"})


def get_target(target: Target | str) -> Target:
    """A Target from itself, a profile name, or a backend name (its default profile)."""
    from ..errors import QKGenValueError

    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        name = DEFAULT_PROFILE.get(target, target)
        if name in PROFILES:
            return PROFILES[name]
    raise QKGenValueError(f"target: {target!r}; allowed: a Target, a backend ({', '.join(BACKENDS)}) or a "
                          f"profile ({', '.join(PROFILES)})")  # fmt: skip
