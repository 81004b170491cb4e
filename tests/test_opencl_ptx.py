"""NVIDIA's OpenCL spells the int8 dot product as inline PTX dp4a (Target.inline_ptx), and from
sm_70 its sub-group reductions as warp shuffles (PTX shfl.sync, the dialect's warp_ptx): only the
targets that say so get them, their kernels use the helpers and no OpenCL sub-group built-in, and
every asm statement is PTX that ptxas takes (the helpers' own text, built as CUDA with nvcc).
NVIDIA's OpenCL compiler itself runs in tests/gpu/test_opencl_nvidia.py."""

from __future__ import annotations

import dataclasses
import re
import subprocess

import pytest

from qkgen.backends.cuda_toolchain import find_nvcc, nvcc_compile
from qkgen.kernels.dialects import dialect
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.tools.catalog import variants

PTX = PROFILES["opencl-nvidia-sm90"]
PORTABLE = PROFILES["opencl-nvidia"]  # the same device as described before inline PTX
# the PTX profile without its dp4a: sub-groups (warps) alike, so kernels differ in the dot product alone
WARPS = dataclasses.replace(PTX, name="opencl-nvidia-warps", dot4=False)
ASM = 'asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(acc));'
SHFL = 'asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(o));'
CVT = ('asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; cvt.u32.u16 %0, t; }"',
       'asm("{ .reg .b16 t; cvt.u16.u32 t, %1; cvt.f32.f16 %0, t; }"',
       'asm("sub.rn.f16x2 %0, %1, %2;"', 'asm("mul.rn.f16x2 %0, %1, %2;"')  # the f16 helpers' (pair) arithmetic


def _render(v: dict, target):
    v = dict(v)
    return render(v.pop("op"), v.pop("format"), target, **v).source


def _ptx(source: str) -> str:
    """CUDA source as nvcc's PTX for the profile's arch."""
    return subprocess.run([find_nvcc(), f"-arch={PTX.arch}", "-ptx", "-x", "cu", "-", "-o", "-"], input=source,
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


def _kernel(src: str) -> str:
    """The kernel from its qualifier on (no header, no helpers)."""
    return src.split("\n__kernel\n", 1)[1]


def test_the_profile_is_nvidia_opencl_with_dp4a_warps_and_mma():
    assert PTX.backend == "opencl" and PTX.inline_ptx and PTX.dot4 and PTX.arch == "sm_90"
    assert (PTX.subgroup_size, PTX.subgroup_sizes, PTX.mma) == (32, (32,), True)
    # apart from what it adds, the capabilities of the NVIDIA OpenCL profile
    assert dataclasses.replace(PTX, name=PORTABLE.name, dot4=False, arch="", inline_ptx=False, subgroup_size=0,
                               subgroup_sizes=(), mma=False) == PORTABLE  # fmt: skip


INT8DOT = list(variants("gemv_int8dot"))


@pytest.mark.parametrize("v", INT8DOT, ids=lambda v: f"{v['format']}-{v['dtype']}-m{v.get('mmax')}")
def test_int8dot_uses_the_ptx_helper_and_nothing_else_changes(v):
    src = _render(v, PTX)
    assert src.count(ASM) == 1 and src.count("inline int qk_dp4a(") == 1  # defined once
    assert "qk_dp4a(" in _kernel(src)
    assert "(int)(char)" not in src and "qk_dot4_i8" not in src and "dot_4x8packed" not in src
    plain = _render(v, WARPS)
    assert plain.count("asm(") == sum(plain.count(c) for c in CVT) and "qk_dot4_i8(" in _kernel(plain)
    assert _kernel(src) == _kernel(plain).replace("qk_dot4_i8(", "qk_dp4a(")


def test_no_other_target_gets_inline_ptx():
    for name, t in PROFILES.items():
        if t.inline_ptx:
            continue
        assert "qk_dp4a" not in dialect(t).prelude()  # not even among all of its helpers
        if t.backend == "opencl":
            assert "shfl.sync" not in dialect(t).prelude()
        for v in INT8DOT[::5]:
            src = _render(v, t)
            assert "asm(" not in src and "qk_dp4a" not in src, name


def test_kernels_without_a_dot_product_are_those_of_nvidia_opencl_with_warps():
    """Every other kernel is the one of the same device without dp4a; its sub-group reductions are
    the warp helpers' (no OpenCL sub-group built-in, no Intel attribute), its only asm theirs and
    the mma helpers' (CUDA's text, another qualifier)."""
    header = re.compile(r"^ \* target: .*\n", re.M)
    for v in variants(None):
        # their 4-way dot products (the int8 mma kernels': their product without mma)
        if v["op"] in ("gemv_int8dot", "gemv_int8mma", "gemv_int8frag", "gemv_int8mma_sub"):
            continue
        src = _render(v, PTX)
        assert header.sub("", src) == header.sub("", _render(v, WARPS)), v
        assert "sub_group" not in src and "dp4a" not in src, v
        # asm only in the helpers: warp shuffles (reductions, and one lane's value for butterflies over
        # part of a warp), and the warp matrix products of the mma kernels
        assert src.count(SHFL) == src.count("inline float qk_warp_") + src.count("inline float qk_shfl_xor("), v
        assert src.count('"mma.sync.aligned.') == src.count("inline void qk_mma_"), v
        assert src.count("asm") == src.count(SHFL) + src.count('"mma.sync.aligned.') + sum(src.count(c) for c in CVT), v


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found (set CUDA_HOME or put it on PATH)")
def test_the_asm_is_ptx_that_ptxas_takes():
    """The OpenCL helper's text as a CUDA device function: ptxas builds it for the profile's arch,
    and it gives the instruction CUDA's __dp4a gives."""
    helper = dialect(PTX).helpers()["qk_dp4a"].replace("inline int", "__device__ inline int", 1)
    source = (f"typedef unsigned int uint;\n\n{helper}\n\n"
              'extern "C" __global__ void k(const uint* a, const uint* b, int* out) {\n'
              "    const uint i = threadIdx.x;\n"
              "    out[i] = qk_dp4a(a[i], b[i], out[i]);\n"
              "    out[i + 32u] = __dp4a((int)a[i], (int)b[i], out[i + 32u]);\n}\n")  # fmt: skip
    assert nvcc_compile(source, PTX.arch, name="qk_dp4a")  # ptxas checks the asm statement
    ptx = _ptx(source)
    assert len(re.findall(r"^\s*dp4a\.s32\.s32 %r\d+, %r\d+, %r\d+, %r\d+;", ptx, re.M)) == 2, ptx


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found (set CUDA_HOME or put it on PATH)")
def test_the_warp_shuffles_are_ptx_that_ptxas_takes():
    """The warp helpers' text as CUDA device functions: ptxas builds them for the profile's arch,
    and they give the shuffles CUDA's __shfl_xor_sync gives."""
    helpers = dialect(PTX).helpers()
    text = "\n\n".join(helpers[f"qk_warp_{w}"].replace("inline float", "__device__ inline float", 1)
                       for w in ("sum", "max"))  # fmt: skip
    source = (f"{text}\n\n"
              'extern "C" __global__ void k(const float* a, float* out) {\n'
              "    out[threadIdx.x] = qk_warp_sum(a[threadIdx.x]) + qk_warp_max(a[threadIdx.x]);\n}\n")  # fmt: skip
    assert nvcc_compile(source, PTX.arch, name="qk_warp")
    ptx = _ptx(source)
    assert len(re.findall(r"^\s*shfl\.sync\.bfly\.b32\s", ptx, re.M)) >= 2, ptx


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found (set CUDA_HOME or put it on PATH)")
def test_the_f16_helpers_are_ptx_that_ptxas_takes():
    """The f16 helpers of a target with inline PTX (cvt, not the byte pair through private memory
    that NVIDIA's compiler puts on its stack; f16x2 pair arithmetic from sm_53) as CUDA device
    functions: ptxas builds them, and the PTX holds the four instructions. Their bits against numpy:
    tests/gpu/test_opencl_nvidia.py."""
    helpers = dialect(PTX).helpers()
    names = ("qk_f32_to_f16", "qk_f16_to_f32", "qk_hsub2", "qk_hmul2")
    assert all(c in helpers[n] for c, n in zip(CVT, names))
    portable = dialect(PORTABLE).helpers()  # no inline PTX: the byte pair, pairs computed in f32
    assert "uchar b[2]" in portable["qk_f32_to_f16"] and "asm" not in portable["qk_hsub2"]
    old = dialect(dataclasses.replace(PTX, arch="sm_52", dot4=False, mma=False)).helpers()  # no f16x2 before sm_53
    assert CVT[0] in old["qk_f32_to_f16"] and "asm" not in old["qk_hmul2"]
    text = "\n\n".join(helpers[n].replace("inline ", "__device__ inline ", 1) for n in names)
    source = (f"typedef unsigned int uint;\ntypedef unsigned short ushort;\n\n{text}\n\n"
              'extern "C" __global__ void k(const float* a, ushort* h, float* f, uint* p) {\n'
              "    h[threadIdx.x] = qk_f32_to_f16(a[threadIdx.x]);\n"
              "    f[threadIdx.x] = qk_f16_to_f32(h[threadIdx.x] ^ 1u);\n"
              "    p[threadIdx.x] = qk_hmul2(qk_hsub2(p[threadIdx.x], 0x64006400u), p[threadIdx.x + 32u]);\n}\n")  # fmt: skip
    assert nvcc_compile(source, PTX.arch, name="qk_f16")
    ptx = _ptx(source)
    for op in (r"cvt\.rn\.f16\.f32", r"cvt\.f32\.f16", r"sub\.rn\.f16x2", r"mul\.rn\.f16x2"):
        assert re.search(op, ptx), (op, ptx)
