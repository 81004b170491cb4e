"""Tier 2: the int8mma GEMV path (x through q8_1, int8 warp matrix products) for every format x dtype
x M on every OpenCL device here, where the product goes through local memory (no mma instruction),
against the int8dot path's own definition (int8dot_terms: the per-block terms in float64) within the
f32 bound of those terms (check.int8dot_error). The CUDA form, with PTX mma, runs in the GPU suite
(tests/gpu/test_int8mma_gpu.py).

N = 67 is not a multiple of the 16 rows a work-group takes, and K = 7 blocks is not a multiple of a
step's blocks, so both tails run; odd block counts also end rows of 2-byte aligned blocks mid-word.
"""

import numpy as np
import pytest

import qkgen
from qkgen.backends import get
from qkgen.errors import QKGenValueError
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render
from qkgen.tools import check

opencl = get("opencl")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
FORMATS = get_op("gemv_int8mma").formats()


def _within_terms_bound(y, x, qt, dtype: str) -> bool:
    err, bound = check.int8dot_error(y, x, qt, dtype)
    return bool(np.all(err <= bound))


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_int8mma_matches_the_int8dot_terms(fmt, dtype, m, device, rng, poisoned):
    qt = qkgen.quantize(rng.standard_normal((67, 7 * 32)).astype(np.float32), fmt)
    x = check.gemv_x(rng, m, qt.shape[1], dtype)
    y = qkgen.gemv(qt, x, path="int8mma", backend="opencl", device=device)
    assert y.shape == (m, 67)
    assert _within_terms_bound(y, x, qt, dtype)


@needs_opencl
@pytest.mark.parametrize("unroll, wg, bank_pad", [(1, 32, True), (3, 128, True), (5, 64, False)])
def test_int8mma_steps_and_warps(unroll, wg, bank_pad, rng, poisoned):
    """Other shapes compute the same sums: one block a step and one warp, steps of 3 and 5 blocks
    (a last step with fewer), warps that take no step at all, stage rows without padding."""
    from qkgen.runtime.api import quantize_q8_1_device
    from qkgen.runtime.plan import Plan

    dev = qkgen.backends.open_device("opencl", DEVICES[0])
    for fmt in ("q4_0", "q5_1"):
        qt = qkgen.quantize(rng.standard_normal((35, 11 * 32)).astype(np.float32), fmt)
        x = check.gemv_x(rng, 5, qt.shape[1], "f32")
        plan = Plan.make(dev, "gemv_int8mma", qt.format, dtype="f32", unroll=unroll, wg=wg, bank_pad=bank_pad)
        sizes = {"N": 35, "K": qt.shape[1], "M": 5}
        (buf, arr, _), = plan.outputs(sizes).values()
        plan.launch({"data": qt.data, "xq": quantize_q8_1_device(x, backend="opencl", device=0), "y": buf}, sizes)
        assert _within_terms_bound(dev.download(arr, "f32", 5 * 35).reshape(5, 35), x, qt, "f32")


def test_cuda_form_uses_the_int8_mma_instruction_and_others_local_memory():
    cuda = render("gemv_int8mma", "q4_0", "cuda-sm90", dtype="f32").source
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in cuda and "frag[" not in cuda
    assert "__syncwarp();" in cuda  # the stages are warp-private
    ocl = render("gemv_int8mma", "q4_0", "opencl-intel-gpu", dtype="f32").source
    assert "mma.sync" not in ocl and "frag[lid * 6u + i] = a[i];" in ocl


def test_formats_and_refusals(rng):
    assert set(FORMATS) == {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}
    with pytest.raises(QKGenValueError, match="unroll: 16; with wg 1024 .* allowed: at most"):
        render("gemv_int8mma", "q8_0", "cuda-sm90", dtype="f16", unroll=16, wg=1024)
    qt = qkgen.quantize(rng.standard_normal((16, 256)).astype(np.float32), "nf4")
    x = rng.standard_normal((2, 256)).astype(np.float32)
    with pytest.raises(QKGenValueError, match="nf4 has no int8mma path; allowed: q4_0, q4_1, q5_0, q5_1, q8_0, q2_k"):
        qkgen.gemv(qt, x, path="int8mma", backend="opencl")
    q4 = qkgen.quantize(rng.standard_normal((16, 256)).astype(np.float32), "q4_0")
    with pytest.raises(QKGenValueError, match="layout: 'planes' is not one the int8mma path reads; allowed: blocks, "):
        qkgen.runtime.api.gemv_plans(q4, x, "int8mma", "opencl", None, layout="planes")
    with pytest.raises(QKGenValueError, match="layout: 'fragments' is not one the int8dot path reads; allowed: blocks"):
        qkgen.runtime.api.gemv_plans(q4, x, "int8dot", "opencl", None, layout="fragments")
