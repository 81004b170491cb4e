"""Tier 2: GEMV y = x @ W.T for every format x variant x activation dtype x M on every OpenCL
device here, against the float64 product of the dequantized weights.

N = 67 is not a multiple of the rows per work-group, and K is 3 chunks (not a multiple of the
chunks all lanes take per step), so the tails run. Tolerance: the worst-case f32 accumulation
bound, plus half an ulp of the output dtype.
"""

import numpy as np
import pytest

import qkgen
from qkgen.formats import reference
from qkgen.tools import check
from qkgen import formats as F
from qkgen.backends import get
from qkgen.tools.catalog import variants
from qkgen.kernels.render import render

from .matrix import spread

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
N_ROWS = check.GEMV_ROWS


def x_host(rng, m: int, k: int, dtype: str) -> np.ndarray:
    return check.gemv_x(rng, m, k, dtype)


def weight(v: dict, rng) -> qkgen.QTensor:
    return check.gemv_sample(F.get(v["format"]), rng, v)


def assert_close(y, x, qt, dtype):
    err, bound = check.gemv_error(y, x, qt, dtype)
    bad = err > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} outside the bound; worst {np.max(err - bound)}"


def _variant_id(v: dict) -> str:
    return "-".join(str(x) for k, x in v.items() if k != "op" and x not in (None, False))


# Each variant on one OpenCL device, the devices taking turns within a format and dtype (its M tiles):
# both devices meet every format and dtype (tests/matrix.py).
VARIANT_DEVICES = [pytest.param(v, d, id=f"{_variant_id(v)}-{d}")
                   for v, d in spread(variants("gemv"), DEVICES, lambda v: (v["format"], v["dtype"]))]  # fmt: skip


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("v, device", VARIANT_DEVICES)
def test_gemv_matches_reference(v, device, m, rng, poisoned):
    qt = weight(v, rng)
    x = x_host(rng, m, qt.shape[1], v["dtype"])
    y = qkgen.gemv(qt, x, backend="opencl", device=device)
    assert y.shape == (m, N_ROWS)
    assert_close(y, x, qt, v["dtype"])


def test_fast_int_to_half_decode_equals_plain_conversion_for_every_code():
    # 0x6400 | v is the half 1024 + v; minus the half 1024 + bias gives v - bias exactly.
    for fmt in (f for f in F.ROWS if f.code != "table"):
        codes = np.arange(1 << fmt.bits, dtype=np.uint32)
        if fmt.code == "signed":
            v, bias = codes ^ (1 << (fmt.bits - 1)), 1 << (fmt.bits - 1)
            twos = np.where(codes >= bias, codes.astype(np.int64) - 2 * bias, codes)  # two's complement
            plain = reference.code_values(fmt, twos)
        else:
            v, bias = codes * fmt.step, fmt.zero
            plain = codes.astype(np.float32) * fmt.step - fmt.zero
        fast = (0x6400 | v).astype(np.uint16).view(np.float16) - np.float16(1024 + bias)
        assert np.array_equal(fast.astype(np.float32), plain), fmt.name
        magic = (0x4B000000 | v).astype(np.uint32).view(np.float32) - np.float32(2**23 + bias)
        assert np.array_equal(magic, plain), fmt.name


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["q4_0", "q5_0", "q8_0", "int4", "int2", "int1", "int8"])
def test_fast_decode_gives_the_same_result_as_plain(name, device, rng):
    fmt = F.get(name)
    kw = {"scale_mode": "row"} if fmt.family == "int" else {}
    qt = reference.quantize(rng.standard_normal((33, 512)).astype(np.float32), name, **kw)
    x = rng.standard_normal((1, 512)).astype(np.float16)
    fast = qkgen.gemv(qt, x, backend="opencl", device=device, fast_decode=True)
    plain = qkgen.gemv(qt, x, backend="opencl", device=device, fast_decode=False)
    assert np.array_equal(fast, plain)
    src = render("gemv", name, "cuda", dtype="f16", **kw).source
    assert "0x6400u" in src and "0x6400u" not in render("gemv", name, "cuda", dtype="f16", fast_decode=False, **kw).source


def test_gemv_bad_input(rng):
    qt = reference.quantize(rng.standard_normal((8, 128)).astype(np.float32), "nf4")
    with pytest.raises(ValueError, match=r"x.shape: \(2, 64\); allowed: \[M, 128\]"):
        qkgen.gemv(qt, np.ones((2, 64), np.float32), backend="opencl")
    with pytest.raises(ValueError, match=r"1 <= M <= 8"):
        qkgen.gemv(qt, np.ones((9, 128), np.float32), backend="opencl")
    with pytest.raises(ValueError, match="x: dtype float64; allowed: float32, float16, bfloat16"):
        qkgen.gemv(qt, np.ones((1, 128)), backend="opencl")
    with pytest.raises(ValueError, match="path: 'int4dot'; allowed: float, int8dot"):
        qkgen.gemv(qt, np.ones((1, 128), np.float32), path="int4dot")
    with pytest.raises(ValueError, match=r"a 2-D weight"):
        qkgen.gemv(reference.quantize(np.ones(128, np.float32), "nf4"), np.ones(128, np.float32), backend="opencl")
