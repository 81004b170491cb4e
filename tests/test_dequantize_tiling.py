"""dequantize's work split (ept elements per chunk, cpi chunks per work-item) changes speed, never
values: every split decodes bit-equal to the reference, tails included, on Intel CPU OpenCL."""

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.formats import reference
from qkgen.runtime.api import weight_values
from qkgen.runtime.plan import Plan
from qkgen.tools import check

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")

SPLITS = [dict(cpi=1), dict(cpi=3), dict(cpi=4, ept=8), dict(cpi=2, ept=16, wg=64)]
# (format, variant): an interleaved table row, a nested one, split-packed rows with and without high
# bits, an 8-bit row, a K-quant and per-row integer scales (whose chunks may run into the next row)
CASES = [("nf4", {}), ("nf4", {"nested": True}), ("q4_0", {}), ("q5_1", {}), ("q8_0", {}), ("q4_k", {}),
         ("int4", {"scale_mode": "row"}), ("blockwise8", {})]  # fmt: skip


def _split_id(s):
    return "-".join(f"{k}{v}" for k, v in s.items())


@pytest.mark.parametrize("split", SPLITS, ids=_split_id)
@pytest.mark.parametrize("name,kw", CASES, ids=lambda c: c if isinstance(c, str) else "-".join(map(str, c)))
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_every_split_decodes_the_reference(name, kw, split, dtype, rng, poisoned):
    fmt = F.get(name)
    if fmt.inline or fmt.family == "int":  # whole rows: 257 rows of 2 blocks (256 for K-quants)
        cols = 512 if fmt.block == 256 else 64
        x = rng.standard_normal((257, cols)).astype(np.float32)
        qt = reference.quantize(x, fmt, **kw)
    else:  # flat, with a tail chunk that is not whole
        x = rng.standard_normal(64 * 257 + 5).astype(np.float32)
        qt = reference.quantize(x, fmt, blocksize=64, **kw)
    dev = open_device("opencl", 0)
    try:
        plan = Plan.make(dev, "dequantize", fmt, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                         scale_mode=qt.scale_mode, **split)  # fmt: skip
    except Exception as e:  # an ept the row does not divide is refused by name
        assert "ept" in str(e), e
        pytest.skip(f"{name}: {e}")
    arrays, sizes = weight_values(qt)
    ((obuf, oarr, _),) = plan.outputs(sizes).values()
    plan.launch({**arrays, "out": obuf}, sizes)
    out = dev.download(oarr, dtype, qt.n).reshape(qt.shape)
    exact, err = check.compare(out, reference.dequantize(qt), dtype)
    assert exact, f"{name} {split}: max abs err {err}"


@pytest.mark.parametrize("cols", [1, 3, 16, 37, 200, 301])
@pytest.mark.parametrize("mode,kw", [("row", {}), ("group", {"group_size": 64}), ("group", {"group_size": 32})],
                         ids=["row", "group64", "group32"])  # 32: the least group size the rows allow
@pytest.mark.parametrize("name", ["int4", "int2", "int8"])
def test_chunks_across_rows_and_groups(name, mode, kw, cols, rng, poisoned):
    """Rows whose length is no multiple of the chunk (and partial last groups): chunks run into
    the next row or group, and every element still takes its own scale."""
    x = rng.standard_normal((29, cols)).astype(np.float32)
    qt = reference.quantize(x, name, scale_mode=mode, **kw)
    out = qkgen.dequantize(qt, "f32", backend="opencl")
    assert np.array_equal(out, reference.dequantize(qt))
