"""Hypothesis tier: ops x formats x variants x backends x shapes with tails, against the reference.

Bounded in time (a fixed number of examples per test, no deadline per example): kernels compile
once per variant and are cached, so later examples cost a launch. Outputs are poisoned.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qkgen
from qkgen import formats as F
from qkgen.backends import get
from qkgen.formats import reference
from qkgen.kernels.ops import MAX_M
from qkgen.kernels.render import render
from qkgen.tools import check
from qkgen.tools.catalog import variants

DEVICES = [(b, d.name) for b in ("opencl", "sycl") if get(b).is_available() for d in get(b).devices()]
pytestmark = pytest.mark.skipif(not DEVICES, reason="no OpenCL or SYCL device")
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
LAYOUTS = sorted({(v["format"], v.get("nested", False), v.get("scale_mode")) for v in variants("gemv")})


def _quantize(fmt: str, nested: bool, scale_mode, shape, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(10.0 ** rng.uniform(-3, 3))
    x.flat[rng.integers(0, x.size, 2)] *= 16.0  # outliers
    return qkgen.quantize(x, fmt, nested=nested, scale_mode=scale_mode), rng


@SETTINGS
@given(layout=st.sampled_from(LAYOUTS), where=st.sampled_from(DEVICES), dtype=st.sampled_from(["f32", "f16", "bf16"]),
       rows=st.integers(1, 9), cols=st.integers(1, 700), seed=st.integers(0, 2**31))  # fmt: skip
def test_dequantize_any_shape(layout, where, dtype, rows, cols, seed):
    fmt, nested, scale_mode = layout
    block = F.get(fmt).block
    if F.get(fmt).inline:  # GGUF: whole blocks only
        cols = max(block, cols // block * block)
    qt, _ = _quantize(fmt, nested, scale_mode, (rows, cols), seed)
    plan_before, qkgen.runtime.plan.POISON_OUTPUTS = qkgen.runtime.plan.POISON_OUTPUTS, True
    try:
        out = qkgen.dequantize(qt, dtype, backend=where[0], device=where[1])
    finally:
        qkgen.runtime.plan.POISON_OUTPUTS = plan_before
    exact, _ = check.compare(np.asarray(out), reference.dequantize(qt), dtype)
    assert exact, f"{qt.describe()} {dtype} on {where}"


@SETTINGS
@given(layout=st.sampled_from(LAYOUTS), where=st.sampled_from(DEVICES), dtype=st.sampled_from(["f32", "f16", "bf16"]),
       n=st.integers(1, 70), chunks=st.integers(1, 9), m=st.integers(1, MAX_M), seed=st.integers(0, 2**31),
       path=st.sampled_from(["float", "int8dot", "int8mma"]))  # fmt: skip
def test_gemv_any_shape(layout, where, dtype, n, chunks, m, seed, path):
    fmt, nested, scale_mode = layout
    row = F.get(fmt)
    if path != "float" and fmt not in qkgen.kernels.ops.OPS[f"gemv_{path}"].formats():
        path = "float"
    ept = render("gemv", fmt, "opencl", nested=nested, scale_mode=scale_mode).param("ept")
    k = chunks * max(ept, row.block if row.inline else 1)
    qt, rng = _quantize(fmt, nested, scale_mode, (n, k), seed)
    x = check.gemv_x(rng, m, k, dtype)
    y = qkgen.gemv(qt, x, path=path, backend=where[0], device=where[1])
    if path != "float":  # x is quantized to q8_1 first: compare with that product, loosely
        want = qkgen.kernels.ops.int8dot.int8dot_reference(qt, check.host_f32(x, dtype))
        got = check.host_f32(np.asarray(y), dtype).astype(np.float64)
        scale = np.abs(want).max() + 1e-30
        assert np.abs(got - want).max() <= 1e-4 * scale + (2.0**-7) * np.abs(want).max(), f"{qt.describe()} {path}"
        return
    err, bound = check.gemv_error(y, x, qt, dtype)
    assert (err <= bound).all(), f"{qt.describe()} m={m} {dtype} on {where}: worst {np.max(err - bound)}"
