"""The dequantize suite through the OpenCL backend on the NVIDIA GPU (OpenCL C 1.2, no fp16, no
sub-groups): the same kernels' OpenCL renderings must give the same bits as the reference."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
from gpucases import assert_same, dequantize_cases, sample_for

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
