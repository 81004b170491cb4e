"""The GEMV family through the SYCL backend on Intel's CPU device, as tests/test_gemv.py does for
OpenCL: every format x variant x activation dtype, M in {1, 3, 8}, odd N and K tails. Kernels are
built together in one bundle first (run-time SYCL builds share a ~2 s header parse)."""

import pytest

import qkgen
from qkgen.backends import get
from qkgen.tools.catalog import variants
from qkgen.kernels.render import render

from .test_gemv import N_ROWS, _variant_id, assert_close, weight, x_host

sycl = get("sycl")
pytestmark = pytest.mark.skipif(not sycl.is_available(), reason=f"SYCL: {sycl.why_unavailable()}")
CASES = list(variants("gemv"))


@pytest.fixture(scope="module")
def dev():
    from qkgen.backends import open_device

    d = open_device("sycl")
    kss = []
    for v in CASES:
        for mmax in (1, 8):
            kss.append(render("gemv", v["format"], d.target, dtype=v["dtype"], blocksize=v.get("blocksize"),
                              nested=v.get("nested", False), scale_mode=v.get("scale_mode"), mmax=mmax))  # fmt: skip
    d.compile_many(kss)
    return d


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("v", CASES, ids=_variant_id)
def test_gemv_matches_reference(v, m, dev, rng, poisoned):
    qt = weight(v, rng)
    x = x_host(rng, m, qt.shape[1], v["dtype"])
    y = qkgen.gemv(qt, x, backend="sycl")
    assert y.shape == (m, N_ROWS)
    assert_close(y, x, qt, v["dtype"])
