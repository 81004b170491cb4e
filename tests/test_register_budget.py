"""Target.registers: a small register file (Intel GPUs: 64 registers a work-item at sub-group 16)
changes the float GEMV's defaults (1 row a lane group and chunks of at most 8 elements at M > 1, no
doubled rows for f32 x at M = 1) and the K-quant searches' (one sub-block a work-item), so that a
lane's arrays stay in registers (tests/test_intel_aot.py checks that with Intel's compiler). Here:
the capability itself, the defaults it gives, the device targets that set it, and every GEMV row at
those defaults on the CPU devices rendered with registers=64, against the reference (M = 5 of an
8-row tile, rows past N, K with a tail step, poisoned outputs). The searches with one sub-block a
work-item: tests/test_quantize_device.py's test_k_quant_search_lanes."""

import dataclasses

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.backends.opencl_target import device_target as opencl_device_target
from qkgen.errors import QKGenValueError
from qkgen.formats import reference
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES, Target, intel_gpu_registers
from qkgen.tools import check

from .matrix import spread
from .test_gemv_prefetch import KW
from .test_gemv_stage_x import N_ROWS, _assert_close, _device, _k_with_tail, _run, devices  # noqa: F401 (a fixture)

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

INTEL = PROFILES["opencl-intel-gpu"]


def test_registers_is_validated_and_shown_only_where_set():
    with pytest.raises(QKGenValueError, match="target.registers: -1; allowed: an int >= 0"):
        dataclasses.replace(INTEL, registers=-1)
    with pytest.raises(QKGenValueError, match="target.registers: True"):
        dataclasses.replace(INTEL, registers=True)
    assert INTEL.describe().endswith("dot4=1 intel_subgroups=1 registers=64")
    assert "registers" not in PROFILES["cuda-sm90"].describe() and "registers" not in PROFILES["pocl"].describe()
    assert {n: t.registers for n, t in PROFILES.items() if t.registers} == {
        "opencl-intel-gpu": 64, "opencl-intel-gpu-sg32": 32, "sycl-intel-gpu": 64, "sycl-intel-gpu-sg32": 32}  # fmt: skip
    assert intel_gpu_registers(16) == 64 and intel_gpu_registers(0) == 0
    assert INTEL.few_registers and not PROFILES["cuda-sm90"].few_registers and not PROFILES["pocl"].few_registers


def test_gemv_defaults_follow_the_register_file():
    small, big = INTEL, PROFILES["cuda-sm90"]
    for name in ("nf4", "q4_k", "mxfp4", "int4"):
        kw = {**KW.get(name, {}), "dtype": "f16", "mmax": 8}
        s, b = render("gemv", name, small, **kw), render("gemv", name, big, **kw)
        assert (s.param("rpw"), s.param("ept")) == (1, 8), (name, s.params)
        assert (b.param("rpw"), b.param("ept")) == (4, 16), (name, b.params)
    # split-packed rows too: 8 elements of one slot run, not their whole blocks
    for name in ("q4_0", "q5_1"):
        assert (render("gemv", name, small, dtype="f16", mmax=8).param("ept"), render("gemv", name, big, dtype="f16", mmax=8).param("ept")) == (8, 32)  # fmt: skip
    # M = 1, f32 x: the rows f16 x takes, not twice them
    assert render("gemv", "q4_0", small, dtype="f32").param("rpw") == 2
    assert render("gemv", "q4_0", big, dtype="f32").param("rpw") == 4
    # an explicit knob still wins
    assert render("gemv", "nf4", small, dtype="f16", mmax=8, rpw=4, **KW["nf4"]).param("rpw") == 4


def test_kquant_searches_take_a_sub_block_a_work_item():
    for name in ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k"):
        fmt = F.get(name)
        assert render("quantize", name, INTEL, dtype="f16").param("lanes") == fmt.sub_count
        assert render("quantize", name, PROFILES["cuda-sm90"], dtype="f16").param("lanes") == 1


class _FakeCLDevice:
    """What device_target reads of a pyopencl device."""

    def __init__(self, kind: int, exts: str):
        self.type, self.extensions, self.opencl_c_version = kind, exts, "OpenCL C 3.0"
        self.int_ptr, self.opencl_c_features = 0, []


def test_opencl_device_targets():
    gpu = opencl_device_target(_FakeCLDevice(4, "cl_khr_fp16 cl_intel_subgroups"), "an Intel GPU")
    cpu = opencl_device_target(_FakeCLDevice(2, "cl_khr_fp16 cl_intel_subgroups"), "a CPU")
    other = opencl_device_target(_FakeCLDevice(4, "cl_khr_fp16"), "another GPU")
    # the fake device gives no sub-group sizes (no loader query): the register count is that of no sub-groups
    assert gpu.registers == intel_gpu_registers(gpu.subgroup_size) and cpu.registers == 0 and other.registers == 0
    assert isinstance(gpu, Target)


def _with_small_registers(devices, where):
    dev, t = _device(devices, where)
    return dev, dataclasses.replace(t, registers=64, name=t.name + "-registers64")


ROWS = get_op("gemv").formats()
CASES = [pytest.param(where, name, dtype, mmax, m, id=f"{where}-{name}-{dtype}-mmax{mmax}-m{m}")
         for (name, (dtype, mmax, m)), where in spread(
             [(n, (("f32", "f16", "bf16")[i % 3], *((1, 1) if i % 4 == 3 else (8, 5)))) for i, n in enumerate(ROWS)],
             ["opencl", "sycl"], lambda c: c[1][0])]  # fmt: skip


@pytest.mark.parametrize("where, name, dtype, mmax, m", CASES)
def test_gemv_at_small_register_defaults(where, name, dtype, mmax, m, devices, rng, poisoned):
    dev, t = _with_small_registers(devices, where)
    fmt, kw = F.get(name), KW.get(name, {})
    ks = render("gemv", fmt, t, dtype=dtype, mmax=mmax, blocksize=kw.get("blocksize"), nested=kw.get("nested", False),
                scale_mode=kw.get("scale_mode"))  # fmt: skip
    if mmax > 1:
        # at most 8 elements, or one 32-bit word of codes where a word holds more
        assert ks.param("rpw") == 1 and ks.param("ept") <= max(8, 32 // fmt.bits), ks.params
    k = _k_with_tail(ks, fmt, kw["blocksize"] if kw.get("scale_mode") == "group" else 0)
    qt = reference.quantize(rng.standard_normal((N_ROWS, k)).astype(np.float32), fmt, **kw)
    x = check.gemv_x(rng, m, k, dtype)
    _assert_close(_run(dev, ks, qt, x, m), x, qt, dtype)
