"""NVIDIA's OpenCL spells the int8 dot product as inline PTX dp4a (Target.inline_ptx): only the
targets that say so get it, their int8dot kernels differ from the portable ones in that spelling
alone, and the asm statement is PTX that ptxas takes (the helper's own text, built as CUDA with
nvcc). NVIDIA's OpenCL compiler itself runs in tests/gpu/test_opencl_nvidia.py."""

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
ASM = 'asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(acc));'


def _render(v: dict, target):
    v = dict(v)
    return render(v.pop("op"), v.pop("format"), target, **v).source


def _kernel(src: str) -> str:
    """The kernel from its qualifier on (no header, no helpers)."""
    return src.split("\n__kernel\n", 1)[1]


def test_the_profile_is_nvidia_opencl_with_dp4a():
    assert PTX.backend == "opencl" and PTX.inline_ptx and PTX.dot4 and PTX.arch == "sm_90"
    # apart from what it adds, the capabilities of the NVIDIA OpenCL profile
    assert dataclasses.replace(PTX, name=PORTABLE.name, dot4=False, arch="", inline_ptx=False) == PORTABLE


INT8DOT = list(variants("gemv_int8dot"))


@pytest.mark.parametrize("v", INT8DOT, ids=lambda v: f"{v['format']}-{v['dtype']}-m{v.get('mmax')}")
def test_int8dot_uses_the_ptx_helper_and_nothing_else_changes(v):
    src = _render(v, PTX)
    assert src.count(ASM) == 1 and src.count("inline int qk_dp4a(") == 1  # defined once
    assert "qk_dp4a(" in _kernel(src)
    assert "(int)(char)" not in src and "qk_dot4_i8" not in src and "dot_4x8packed" not in src
    plain = _render(v, PORTABLE)
    assert "asm(" not in plain and "qk_dot4_i8(" in _kernel(plain)
    assert _kernel(src) == _kernel(plain).replace("qk_dot4_i8(", "qk_dp4a(")


def test_no_other_target_gets_inline_ptx():
    for name, t in PROFILES.items():
        if t.inline_ptx:
            continue
        assert "qk_dp4a" not in dialect(t).prelude()  # not even among all of its helpers
        for v in INT8DOT[::5]:
            src = _render(v, t)
            assert "asm(" not in src and "qk_dp4a" not in src, name


def test_kernels_without_a_dot_product_are_those_of_nvidia_opencl():
    header = re.compile(r"^ \* target: .*\n", re.M)
    for v in variants(None):
        # their 4-way dot products (the int8 mma kernels': their product without mma)
        if v["op"] in ("gemv_int8dot", "gemv_int8mma", "gemv_int8frag"):
            continue
        src = _render(v, PTX)
        assert "asm(" not in src
        assert header.sub("", src) == header.sub("", _render(v, PORTABLE)), v


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
    ptx = subprocess.run([find_nvcc(), f"-arch={PTX.arch}", "-ptx", "-x", "cu", "-", "-o", "-"], input=source,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert len(re.findall(r"^\s*dp4a\.s32\.s32 %r\d+, %r\d+, %r\d+, %r\d+;", ptx, re.M)) == 2, ptx
