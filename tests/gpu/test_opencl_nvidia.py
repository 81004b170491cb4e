"""The dequantize suite through the OpenCL backend on the NVIDIA GPU (OpenCL C 1.2, no fp16, no
sub-groups): the same kernels' OpenCL renderings must give the same bits as the reference. The
int8dot GEMV path (local-memory reductions, the portable dot product) within the f32 bound of its
own definition, for every row it takes."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
from gpucases import assert_same, dequantize_cases, int8dot_k, int8dot_within_bound, sample, sample_for
from qkgen.formats import reference
from qkgen.kernels.ops import get_op

pytestmark = pytest.mark.gpu


def test_nvidia_device_target(opencl_nvidia):
    info = opencl_nvidia.info
    print(info.line())
    assert info.kind == "gpu"
    # What the kernels are rendered for on this device (NVIDIA: OpenCL C 1.2, no sub-groups).
    t = opencl_nvidia.target
    assert t.backend == "opencl" and t.lang.startswith("OpenCL C ")
    assert not t.subgroup_size or t.subgroup_size in t.subgroup_sizes


@pytest.mark.parametrize("v,shape", dequantize_cases())
def test_dequantize_numpy(v, shape, opencl_nvidia):
    qt = sample_for(v, shape)
    out = qkgen.dequantize(qt, v["dtype"], backend="opencl", device="NVIDIA")
    assert isinstance(out, np.ndarray)
    assert_same(out, qt, v["dtype"])


@pytest.mark.parametrize("v,shape", [c for c in dequantize_cases() if c.values[0]["dtype"] == "bf16"][::3])
def test_dequantize_pyopencl_arrays(v, shape, opencl_nvidia):
    cla = pytest.importorskip("pyopencl.array")
    qt0 = sample_for(v, shape)
    qt = qt0.with_arrays(**{k: cla.to_device(opencl_nvidia.queue, np.ascontiguousarray(a))
                            for k, a in qt0.arrays().items()})  # fmt: skip
    out = qkgen.dequantize(qt, "bf16", backend="opencl", device="NVIDIA")
    assert isinstance(out, cla.Array)
    assert_same(out.get(), qt0, "bf16")


@pytest.mark.parametrize("m, dtype", [(1, "f32"), (3, "f16"), (8, "bf16")])
@pytest.mark.parametrize("fmt", get_op("gemv_int8dot").formats())
def test_gemv_int8dot(fmt, m, dtype, opencl_nvidia):
    qt = sample(fmt, (67, int8dot_k(fmt)))  # 67 rows: not a multiple of the rows per work-group
    x32 = np.random.default_rng(m).standard_normal((m, qt.shape[1])).astype(np.float32)
    x = x32 if dtype == "f32" else x32.astype(np.float16) if dtype == "f16" else reference.round_to(x32, "bf16")
    y = qkgen.gemv(qt, x, path="int8dot", backend="opencl", device="NVIDIA")
    assert y.shape == (m, 67) and y.dtype == x.dtype
    got = reference.host_f32(np.asarray(y), dtype).astype(np.float64)
    eps = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8}[dtype]
    ok, worst = int8dot_within_bound(got, qt, reference.host_f32(x, dtype), eps)
    assert ok, f"outside the f32 bound of int8dot_terms: worst {worst}x"
