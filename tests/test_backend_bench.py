"""What a benchmark asks a device: its copy ceiling, its L2 size and event timing, on every CPU
device here (Intel's OpenCL runtime, pocl, SYCL opencl:cpu)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qkgen.backends import get, open_device
from qkgen.errors import QKGenValueError

from .test_backend_launch import _OPENCL, _SYCL, kernel_source

DEVICES = [("opencl", d.index) for d in get("opencl").devices()] if get("opencl").is_available() else []
DEVICES += [("sycl", d.index) for d in get("sycl").devices()] if get("sycl").is_available() else []
if not DEVICES:
    pytestmark = pytest.mark.skip(reason="no OpenCL or SYCL device")


@pytest.mark.parametrize("backend, index", DEVICES)
def test_copy_ceiling_is_a_positive_finite_bandwidth(backend, index):
    dev = open_device(backend, index)
    res = dev.copy_ceiling(8 << 20, iters=3, warmup=1)
    assert math.isfinite(res["gbps"]) and res["gbps"] > 0, res
    assert res["buffer_bytes"] == 8 << 20 and res["method"]
    assert res["gbps"] == max(res["all"].values())


@pytest.mark.parametrize("backend, index", DEVICES)
def test_l2_bytes_is_positive_or_unknown(backend, index):
    l2 = open_device(backend, index).l2_bytes()
    assert l2 is None or (isinstance(l2, int) and l2 > 0)


@pytest.mark.parametrize("backend, index", DEVICES)
def test_copy_ceiling_refuses_tiny_buffers(backend, index):
    with pytest.raises(QKGenValueError, match="nbytes: "):
        open_device(backend, index).copy_ceiling(100)


@pytest.mark.parametrize("backend", ["opencl", "sycl"])
def test_time_ms_of_a_2d_launch(backend):
    if not get(backend).is_available():
        pytest.skip(f"{backend}: {get(backend).why_unavailable()}")
    dev = open_device(backend, 0)
    source = _OPENCL if backend == "opencl" else _SYCL.replace("DIMS", "2")
    name = "qk_test_nd" if backend == "opencl" else "qk_test_nd_2"
    kernel = dev.compile(kernel_source(dev, name, source, 2, True))
    gbuf, _ = dev.empty(64 * 8, "u32")
    lbuf, _ = dev.empty(64 * 8, "u32")
    args = [gbuf, lbuf, dev.local_arg("u32", 32), np.uint32(64), np.uint32(8)]
    ms = dev.time_ms(kernel, args, (64, 8), (8, 4))
    assert math.isfinite(ms) and ms >= 0
