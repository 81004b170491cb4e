"""Devices: typed targets built from what each device reports, the listing line, one Device per
physical device however it is named, users' own contexts and queues, and reasons without a
repeated prefix."""

from __future__ import annotations

import types

import numpy as np
import pytest

from qkgen import backends
from qkgen.backends import get, open_device
from qkgen.backends.base import DeviceInfo
from qkgen.backends.opencl_target import chosen_subgroup_size, device_target
from qkgen.errors import BackendUnavailable, QKGenValueError
from qkgen.kernels.target import PROFILES, Target

opencl = get("opencl")
sycl = get("sycl")
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
needs_sycl = pytest.mark.skipif(not sycl.is_available(), reason=f"SYCL: {sycl.why_unavailable()}")


# ---- targets ----


@pytest.mark.parametrize("sizes, want", [((4, 8, 16, 32, 64), 16), ((8, 32, 64), 32), ((64,), 0), ((), 0),
                                         ((8,), 8)])  # fmt: skip
def test_subgroup_size_choice(sizes, want):
    assert chosen_subgroup_size(sizes) == want


def _fake_cl_device(extensions: str, version: str = "OpenCL C 3.0"):
    return types.SimpleNamespace(extensions=extensions, opencl_c_version=version, opencl_c_features=[],
                                 int_ptr=0)  # fmt: skip


def test_subgroups_without_known_sizes_fall_back_to_none(monkeypatch):
    # A device that has sub-groups but cannot say their sizes gets no sub-groups, never size 0 with
    # sub-groups on (the combination issue 9 found in `qkgen dump`).
    from qkgen.backends import opencl_target

    monkeypatch.setattr(opencl_target, "subgroup_sizes", lambda dev: ())
    t = device_target(_fake_cl_device("cl_khr_fp16 cl_intel_subgroups cl_khr_integer_dot_product"), "fake")
    assert (t.subgroup_size, t.subgroups, t.fp16, t.dot4, t.lang) == (0, False, True, True, "OpenCL C 3.0")
    monkeypatch.setattr(opencl_target, "subgroup_sizes", lambda dev: (8, 32))
    t = device_target(_fake_cl_device("cl_khr_subgroups"), "fake")
    assert t.subgroup_size == 32 and t.subgroup_sizes == (8, 32) and not t.fp16


def _fake_nvidia_device(cc: tuple[int, int] | None, platform_vendor: str = "NVIDIA Corporation"):
    """What NVIDIA's OpenCL driver reports for a GPU of compute capability cc (None: the
    attribute query fails, as pyopencl's LogicError)."""
    exts = ("cl_khr_global_int32_base_atomics cl_khr_fp64 cl_khr_byte_addressable_store cl_khr_icd "
            "cl_khr_gl_sharing cl_nv_compiler_options cl_nv_device_attribute_query cl_nv_pragma_unroll "
            "cl_nv_copy_opts cl_nv_create_buffer")  # fmt: skip
    dev = _fake_cl_device(exts, "OpenCL C 1.2 ")
    dev.platform = types.SimpleNamespace(vendor=platform_vendor, name="NVIDIA CUDA")
    dev.vendor = "NVIDIA Corporation"
    if cc is not None:
        dev.compute_capability_major_nv, dev.compute_capability_minor_nv = cc
    return dev


def test_nvidia_opencl_gets_inline_ptx_and_dp4a_from_its_compute_capability():
    t = device_target(_fake_nvidia_device((9, 0)), "NVIDIA H100 80GB HBM3")
    assert (t.inline_ptx, t.dot4, t.arch, t.fp16, t.subgroup_size, t.subgroup_sizes, t.lang) == (
        True, True, "sm_90", False, 32, (32,), "OpenCL C 1.2")  # fmt: skip
    assert t.caps() == PROFILES["opencl-nvidia-sm90"].caps() and t.describe().endswith("dot4=1 inline_ptx=1 mma=1")
    assert device_target(_fake_nvidia_device((6, 1)), "GTX 1080").dot4  # dp4a from sm_61
    # warps as sub-groups from sm_70 (PTX shfl.sync); an sm_61 device gets the local-memory trees
    assert device_target(_fake_nvidia_device((7, 0)), "V100").subgroup_size == 32
    assert device_target(_fake_nvidia_device((6, 1)), "GTX 1080").subgroup_size == 0
    # warp matrix products (PTX mma.sync) from sm_80
    assert device_target(_fake_nvidia_device((8, 0)), "A100").mma
    assert not device_target(_fake_nvidia_device((7, 5)), "T4").mma
    # sm_60 and Maxwell: the compiler takes PTX, but there is no dp4a
    for cc in ((6, 0), (5, 2)):
        t = device_target(_fake_nvidia_device(cc), "old")
        assert t.inline_ptx and not t.dot4 and t.arch == f"sm_{cc[0]}{cc[1]}"
    # the attribute cannot be read: no PTX, no guess from the name
    t = device_target(_fake_nvidia_device(None), "NVIDIA H100 80GB HBM3")
    assert not t.inline_ptx and not t.dot4 and t.arch == "" and t.subgroup_size == 0
    # another OpenCL implementation on an NVIDIA GPU (pocl's CUDA driver) has another compiler
    t = device_target(_fake_nvidia_device((9, 0), platform_vendor="The pocl project"), "NVIDIA H100")
    assert not t.inline_ptx and not t.dot4 and t.subgroup_size == 0


def test_intel_opencl_has_no_inline_ptx():
    dev = _fake_cl_device("cl_khr_fp16 cl_khr_integer_dot_product cl_intel_subgroups")
    dev.platform = types.SimpleNamespace(vendor="Intel(R) Corporation", name="Intel(R) OpenCL")
    dev.compute_capability_major_nv, dev.compute_capability_minor_nv = 9, 0  # never read without the extension
    t = device_target(dev, "Intel(R) Xeon(R)")
    assert not t.inline_ptx and t.dot4 and t.arch == "" and "inline_ptx" not in t.describe()


@needs_opencl
def test_opencl_targets_come_from_the_devices():
    for info in opencl.devices():
        t = info.target
        assert isinstance(t, Target) and t.backend == "opencl" and t.name == f"opencl:{info.name}"
        assert t.lang.startswith("OpenCL C ")
        assert not t.subgroup_size or t.subgroup_size in t.subgroup_sizes
        line = info.line()
        assert t.lang in line and "opencl_c" not in line
        assert (f"sub-group {t.subgroup_size}" in line or f"warps of {t.subgroup_size}" in line) if t.subgroups else (
            "no sub-groups" in line)
        if "Intel" in info.platform:  # the pip CPU runtime reports 4..64 and fp16
            assert t.subgroup_size == 16 and t.fp16 and t.dot4
        if "Portable" in info.platform:
            assert not t.subgroups and not t.fp16
        assert t.inline_ptx == ("NVIDIA" in info.platform)


def test_cuda_target_from_compute_capability():
    from qkgen.backends.cuda import device_target as cuda_target

    t = cuda_target(9, 0, "NVIDIA H100")
    assert (t.name, t.arch, t.subgroup_size, t.dot4, t.bf16) == ("cuda:NVIDIA H100", "sm_90", 32, True, True)
    assert cuda_target(12, 0).arch == "sm_120"


def test_line_shows_the_target():
    t = Target("opencl:x", "opencl", "OpenCL C 1.2", fp16=False, bf16=False, subgroup_size=0)
    info = DeviceInfo("opencl", 3, "x", "cpu", "P", t, {"memory": "1.0 GiB"})
    assert info.line() == "[3] x (cpu, P; OpenCL C 1.2, no sub-groups; memory 1.0 GiB)"
    info = DeviceInfo("opencl", 0, "NVIDIA H100", "gpu", "NVIDIA CUDA", PROFILES["opencl-nvidia-sm90"])
    line = "[0] NVIDIA H100 (gpu, NVIDIA CUDA; OpenCL C 1.2, dot4, inline PTX, warps of 32 as sub-groups, mma, sm_90)"
    assert info.line() == line


# ---- listing ----


@needs_opencl
def test_a_platform_without_devices_does_not_break_listing(monkeypatch):
    from qkgen.backends import opencl as mod

    cl = mod.cl()

    class Empty:
        name = "Empty Platform"

        def get_devices(self):
            raise cl.LogicError("clGetDeviceIDs failed: DEVICE_NOT_FOUND")

    real = cl.get_platforms()
    monkeypatch.setattr(cl, "get_platforms", lambda: [Empty(), *real])
    fresh = mod.OpenCLBackend()
    assert [d.name for d in fresh.devices()] == [d.name for d in opencl.devices()]


# ---- one Device per physical device ----


@needs_opencl
def test_every_spelling_of_a_device_opens_the_same_one():
    first = open_device("opencl", None)
    assert open_device("opencl", 0) is first
    assert open_device("opencl", "0") is first
    assert open_device("opencl", np.int64(0)) is first
    assert open_device("opencl", first.info.name) is first
    assert open_device("opencl", first.info.platform.split()[0]) is first
    if len(opencl.devices()) > 1:
        other = open_device("opencl", 1)
        assert other is not first and open_device("opencl", "1") is other


@needs_opencl
def test_pocl_is_found_by_its_short_name():
    if not any("Portable" in d.platform for d in opencl.devices()):
        pytest.skip("no pocl here")
    assert "Portable" in open_device("opencl", "pocl").info.platform


@needs_opencl
def test_arrays_of_one_spelling_are_accepted_by_another():
    import pyopencl.array as cla

    a = cla.to_device(open_device("opencl", 0).queue, np.arange(16, dtype=np.uint8))
    assert open_device("opencl", "0").as_input(a, "data", ("uint8",)) is not None


@needs_opencl
def test_a_users_context_and_queue_are_used_as_they_are():
    import pyopencl as cl
    import pyopencl.array as cla

    raw = opencl._raw[0]
    ctx = cl.Context([raw])
    dev = open_device("opencl", ctx)
    assert dev.ctx is ctx and open_device("opencl", ctx) is dev and dev.info.index == 0
    a = cla.to_device(cl.CommandQueue(ctx), np.arange(16, dtype=np.uint8))
    assert dev.as_input(a, "data", ("uint8",)) is not None
    with pytest.raises(QKGenValueError, match="another OpenCL context"):
        open_device("opencl", 0).as_input(a, "data", ("uint8",))
    queue = cl.CommandQueue(ctx)
    qdev = open_device("opencl", queue)
    assert qdev.queue is queue and qdev.ctx == ctx
    buf, arr = qdev.empty(8, "u8")
    assert qdev.download(arr, "u8", 8).dtype == np.uint8


@needs_sycl
def test_a_users_sycl_queue_is_accepted():
    import dpctl
    import dpctl.memory

    user = dpctl.SyclQueue(sycl._raw[0])  # out of order, no profiling: qkgen makes its own on the context
    dev = open_device("sycl", user)
    assert open_device("sycl", user) is dev
    assert dev.queue.sycl_context == user.sycl_context and dev.queue.is_in_order
    from qkgen.backends.sycl_usm import USMArray

    mem = dpctl.memory.MemoryUSMDevice(64, queue=user)
    assert dev.as_input(USMArray(mem, np.uint8, (64,)), "data", ("uint8",)) is not None


@needs_opencl
def test_objects_that_name_no_device_are_refused():
    with pytest.raises((QKGenValueError, BackendUnavailable), match="device: "):
        open_device("opencl", object())


# ---- messages ----


@pytest.mark.parametrize("bad", ["", 0.5])
def test_empty_or_odd_backend_names_are_refused(bad):
    with pytest.raises(QKGenValueError, match="backend: "):
        backends.select(bad)


@needs_opencl
def test_empty_device_name_is_refused():
    with pytest.raises(QKGenValueError, match="device: ''"):
        open_device("opencl", "")


def test_reasons_carry_the_backend_name_once(monkeypatch):
    from qkgen.backends import base

    class Broken(base.Backend):
        name = "cuda"

        def devices(self):
            raise BackendUnavailable("cuda: pycuda is not installed; pip install 'qkgen[cuda]'")

        def _open(self, info):
            raise AssertionError

    why = Broken().why_unavailable()
    assert why == "pycuda is not installed; pip install 'qkgen[cuda]'"
    for name, reason in backends.available().items():
        assert reason is None or not reason.startswith(f"{name}: "), reason
