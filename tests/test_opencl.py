"""Tier 2: every dequantize kernel on every OpenCL device here, against the reference.

On CI that is Intel's CPU runtime (fp16, sub-groups) and pocl (neither), so both the native and
the fallback paths of the dialect run. f32 must equal the reference exactly; f16/bf16 must equal
the correctly rounded reference.
"""

import numpy as np
import pytest

import qkgen
from qkgen.formats import reference
from qkgen.tools import check
from qkgen import formats as F
from qkgen.backends import get
from qkgen.tools.catalog import variants

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
CASES = list(variants("dequantize"))


def _id(v):
    return "-".join(str(x) for k, x in v.items() if k != "op" and x not in (None, False))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("v", CASES, ids=_id)
def test_dequantize_matches_reference(v, device, rng, poisoned):
    fmt = F.get(v["format"])
    qt = check.sample(fmt, rng, v.get("nested", False), v.get("scale_mode"), v.get("blocksize"))
    out = qkgen.dequantize(qt, v["dtype"], backend="opencl", device=device)
    assert out.shape == qt.shape
    exact, err = check.compare(out, reference.dequantize(qt), v["dtype"])
    assert exact, f"max abs err {err}"


@pytest.mark.parametrize("n", [1, 31, 32, 33, 63, 64, 65, 4095, 4097, 12345])
@pytest.mark.parametrize("name", ["nf4", "blockwise8", "int1", "int4"])
def test_odd_lengths_and_tails(name, n, rng, poisoned):
    fmt = F.get(name)
    x = rng.standard_normal(n).astype(np.float32)
    if fmt.family == "int":
        qt = reference.quantize(x, fmt, scale_mode="tensor")
    else:
        qt = reference.quantize(x, fmt, blocksize=fmt.blocksizes[0])
    out = qkgen.dequantize(qt, "f32", backend="opencl")
    assert np.array_equal(out, reference.dequantize(qt))


@pytest.mark.parametrize("blocksize", F.get("nf4").blocksizes)
def test_every_bnb4_blocksize(blocksize, rng, poisoned):
    x = rng.standard_normal(3 * blocksize + 7).astype(np.float32)
    qt = reference.quantize(x, "fp4", blocksize=blocksize, nested=True)
    assert np.array_equal(qkgen.dequantize(qt, "f32", backend="opencl"), reference.dequantize(qt))


def test_special_blocks(rng, poisoned):
    # all-zero blocks and blocks of one repeated value, next to ordinary ones
    x = rng.standard_normal(64 * 8).astype(np.float32)
    x[:64] = 0.0
    x[64:128] = -3.5
    for name in ("nf4", "q4_0", "q5_1", "q8_0", "int8"):
        kw = {"scale_mode": "row"} if F.get(name).family == "int" else {}
        qt = reference.quantize(x.reshape(8, 64), name, **kw)
        assert np.array_equal(qkgen.dequantize(qt, "f32", backend="opencl"), reference.dequantize(qt)), name


def test_pyopencl_arrays_are_used_in_place(rng):
    import pyopencl.array as cla

    from qkgen.backends import open_device

    dev = open_device("opencl")
    qt = reference.quantize(rng.standard_normal((4, 256)).astype(np.float32), "q4_1")
    on_dev = qt.with_arrays(data=cla.to_device(dev.queue, qt.data))
    out = qkgen.dequantize(on_dev, "f16", backend="opencl")
    assert isinstance(out, cla.Array) and out.shape == (4, 256)
    assert np.array_equal(out.get(), reference.round_to(reference.dequantize(qt), "f16"))


def test_disk_cache_serves_a_second_process(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import time, numpy as np, qkgen\n"
        "from qkgen.backends import open_device\n"
        "dev = open_device('opencl')\n"
        "ks = qkgen.render('dequantize', 'q5_1', dev.target, dtype='bf16')\n"
        "path = dev.cache_path(dev.disk_key(ks, dev.build_options(ks)), '.bin')\n"
        "print(path.exists()); dev.compile(ks); print(path.exists())\n"
    )
    env = dict(os.environ, QKGEN_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["False", "True"]
    assert second.stdout.split() == ["True", "True"]


def test_build_error_carries_log_and_numbered_source():
    from qkgen.backends import open_device
    from qkgen.kernels.source import Arg, KernelSource

    dev = open_device("opencl")
    ks = KernelSource(op="dequantize", format="nf4", target=dev.target, name="broken", template="-",
                      source="__kernel void broken(__global float* x) { x[0] = undefined_thing; }\n",
                      params=(), args=(Arg("x", "out", "f32"),), wg=1)  # fmt: skip
    with pytest.raises(qkgen.BuildError) as e:
        dev.compile(ks)
    assert "undefined_thing" in e.value.log
    assert "    1  __kernel void broken" in str(e.value)
