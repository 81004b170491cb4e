"""The quick_build marker (tests/conftest.py): a marked file's OpenCL and SYCL builds turn the
optimizer off, under their own cache keys; CUDA's options never change."""

import pytest

import qkgen.backends.base as base
from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.kernels.render import render

pytestmark = pytest.mark.quick_build


def test_a_marked_file_builds_quick():
    assert base.QUICK_BUILDS is True


@pytest.mark.parametrize("backend, flag", [("opencl", "-cl-opt-disable"), ("sycl", "-O0")])
def test_options_and_cache_keys(backend, flag, monkeypatch):
    if not get(backend).is_available():
        pytest.skip(f"{backend}: {get(backend).why_unavailable()}")
    dev = open_device(backend, 0)
    ks = render("dequantize", F.get("q4_0"), dev.target, dtype="f32")
    monkeypatch.setattr(base, "QUICK_BUILDS", False)
    plain = dev.build_options(ks)
    monkeypatch.setattr(base, "QUICK_BUILDS", True)
    quick = dev.build_options(ks)
    assert flag not in plain and quick == [*plain, flag]
    assert dev.disk_key(ks, quick) != dev.disk_key(ks, plain)


def test_cuda_keeps_its_flags(monkeypatch):
    from qkgen.backends.cuda import CUDADevice
    from qkgen.backends.cuda_toolchain import NVCC_FLAGS

    monkeypatch.setattr(base, "QUICK_BUILDS", True)
    assert CUDADevice.build_options(object.__new__(CUDADevice), None) == list(NVCC_FLAGS)
