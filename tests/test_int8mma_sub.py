"""Tier 2: the int8mma path of the super-block rows (gemv_int8mma_sub: K-quants, MXFP4, NVFP4) for
every format x dtype x M on every OpenCL device here, where the product goes through local memory
(no mma instruction), against the int8dot path's own definition (int8dot_terms: the per-sub-block
terms in float64) within the f32 bound of those terms (check.int8dot_error). The CUDA form, with
PTX mma, runs in the GPU suite (tests/gpu/test_int8mma_gpu.py).

N = 35 is not a multiple of the 16 rows a work-group takes; K = 3 super-blocks of 256 elements
(24 chunks) leaves the last turn's chunks past the end.
"""

import numpy as np
import pytest

import qkgen
from qkgen.backends import get
from qkgen.errors import QKGenValueError
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render
from qkgen.runtime.api import gemv_plans
from qkgen.tools import check

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

opencl = get("opencl")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
FORMATS = get_op("gemv_int8mma_sub").formats()


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_int8mma_sub_matches_the_int8dot_terms(fmt, dtype, m, device, rng, poisoned):
    qt = qkgen.quantize(rng.standard_normal((35, 3 * 256)).astype(np.float32), fmt)
    x = check.gemv_x(rng, m, qt.shape[1], dtype)
    assert gemv_plans(qt, x, "int8mma", "opencl", device)[0][-1].ks.op == "gemv_int8mma_sub"
    y = qkgen.gemv(qt, x, path="int8mma", backend="opencl", device=device)
    assert y.shape == (m, 35)
    err, bound = check.int8dot_error(y, x, qt, dtype)
    assert np.all(err <= bound)


def test_formats_forms_and_refusals(rng):
    """The super-block rows of the int8dot path; the zero points come off each code byte, q2_k's
    16-element mins take an all-ones product; CUDA's form is the mma instruction, OpenCL's without
    one the product through local memory (W in fragments: tests/test_int8frag_sub.py)."""
    assert set(FORMATS) == {"q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "mxfp4", "nvfp4"}
    assert set(FORMATS) | set(get_op("gemv_int8mma").formats()) == set(get_op("gemv_int8dot").formats())
    q6 = render("gemv_int8mma_sub", "q6_k", "cuda-sm90", dtype="f16").source
    assert "- 0x20202020u) ^ 0x80808080u;  /* minus 32 a byte */" in q6 and "mma.sync.aligned.m16n8k32" in q6
    assert "0x01010101u, 0x01010101u, 0u, 0u};  /* W all ones */" in render("gemv_int8mma_sub", "q2_k", "cuda-sm90",
                                                                             dtype="f32").source
    ocl = render("gemv_int8mma_sub", "q4_k", "opencl-intel-gpu", dtype="f32").source
    assert "mma.sync" not in ocl and "frag[lid * 6u + i] = a[i];" in ocl
    with pytest.raises(QKGenValueError, match="format: gemv_int8mma_sub does not take q4_0; allowed: q2_k, q3_k"):
        render("gemv_int8mma_sub", "q4_0", "cuda-sm90", dtype="f32")
