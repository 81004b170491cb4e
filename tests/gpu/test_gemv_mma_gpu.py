"""The mma GEMV path on the CUDA GPU (PTX mma m16n8k16): every format x variant of gemv_mma x M,
f16, bf16 and f32 x (f32 also rounded by round_to_f16 first), numpy and torch inputs, against the float64 product of x and the dequantized weight
rounded to x's type (within the f32 accumulation bound plus half an ulp of the output), and a launch
inside a CUDA graph."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
from qkgen import formats as F
from qkgen.kernels.render import render
from qkgen.runtime import api
from qkgen.tools import catalog, check

pytestmark = pytest.mark.gpu
MMA = list(catalog.variants("gemv_mma"))


@pytest.fixture(scope="module", autouse=True)
def compiled(cuda_device):
    """The kernels built up front by parallel nvcc runs."""
    cuda_device.compile_many([render("gemv_mma", v["format"], cuda_device.target,
                                     **{k: x for k, x in v.items() if k not in ("op", "format")}) for v in MMA])


def _weight(v: dict, rng):
    return check.gemv_sample(F.get(v["format"]), rng, v, op="gemv_mma")


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("v", MMA, ids=lambda v: "-".join(str(x) for k, x in v.items() if k != "op" and x not in (None, False)))
def test_gemv_mma_cuda(v, m, cuda_device):
    rng = np.random.default_rng(m)
    qt = _weight(v, rng)
    x = check.gemv_x(rng, m, qt.shape[1], v["dtype"])
    if v.get("x_rounded"):  # f32 x rounded by round_to_f16 first: bit for bit the one-kernel form's y
        y = check.gemv_round_x(qt, x, True, "cuda")
        assert np.array_equal(y.view(np.uint32), check.gemv_round_x(qt, x, False, "cuda").view(np.uint32))
    else:
        y = qkgen.gemv(qt, x, path="mma", backend="cuda")
    table = api.gemv_plans(qt, x, "mma", "cuda")[0][-1].ks.param("k_multiple") is not None  # CUDA's pair table
    err, bound = check.gemv_error(y, x, qt, v["dtype"], rounded=True, pair_table=table)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} outside the bound"


PAIR_ROWS = [("nf4", {"nested": True, "blocksize": 64}), ("nf4", {"blocksize": 64}), ("fp4", {"nested": True, "blocksize": 64}),
             ("nf4", {"blocksize": 256}), ("int4", {"scale_mode": "row"}), ("int4", {"scale_mode": "group", "blocksize": 32})]


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("name, kw", PAIR_ROWS, ids=lambda a: "-".join(map(str, a.values())) if isinstance(a, dict) else a)
def test_gemv_mma_pair_table_cuda(name, kw, dtype, m, cuda_device, poisoned):
    """CUDA's mma path takes the byte-pair table where K allows it: K = 512 + 128 + 64 is whole steps
    and a step past the row's end (and, for blocks of 256, not whole pieces: the float decode), 67
    rows; y within the pair table's model (code values rounded, then scaled) or the float decode's."""
    rng = np.random.default_rng(m)
    k = 704
    qt = qkgen.quantize(rng.standard_normal((67, k)).astype(np.float32), name, **kw)
    x = check.gemv_x(rng, m, k, dtype)
    plans, _ = api.gemv_plans(qt, x, "mma", "cuda")
    table = plans[-1].ks.param("k_multiple") is not None
    assert table == (kw.get("blocksize") != 256), plans[-1].ks.name
    y = qkgen.gemv(qt, x, path="mma", backend="cuda")
    err, bound = check.gemv_error(y, x, qt, dtype, rounded=True, pair_table=table)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} outside the bound"


@pytest.mark.parametrize("fmt, kw", [("q4_0", {}), ("nf4", {"blocksize": 64, "nested": True}), ("q8_0", {})])
def test_gemv_mma_torch_large_and_graph(fmt, kw, torch_cuda):
    """Torch tensors in and out on a model-sized weight (4096 x 14336 has 448 chunks a row, steps
    past the last one included), and the same call captured in a CUDA graph gives the same y."""
    torch = torch_cuda
    rng = np.random.default_rng(0)
    w = rng.standard_normal((1000, 14336)).astype(np.float32)
    qt = qkgen.quantize(torch.from_numpy(w).cuda(), fmt, **kw)
    x = torch.randn(8, 14336, device="cuda").half()
    y = qkgen.gemv(qt, x, path="mma")
    wq = qkgen.dequantize(qt, "f32").half().double()
    want = x.double() @ wq.T
    bound = 2 * 14336 * 2.0**-24 * (x.double().abs() @ wq.abs().T) + 2.0**-11 * want.abs()
    assert bool(((y.double() - want).abs() <= bound).all())
    g = torch.cuda.CUDAGraph()
    out = torch.empty_like(y)
    with torch.cuda.graph(g):
        out.copy_(qkgen.gemv(qt, x, path="mma"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, y)


@pytest.mark.parametrize("fmt, kw", [("nf4", {"blocksize": 64, "nested": True}), ("int8", {})])
def test_round_x_torch_and_graph(fmt, kw, torch_cuda):
    """f32 torch x at M = 8 rounded by round_to_f16 first (two launches) gives the one-kernel form's
    y bit for bit, and the same y when the two launches are captured in a CUDA graph."""
    from qkgen.runtime import api

    torch = torch_cuda
    rng = np.random.default_rng(1)
    qt = qkgen.quantize(torch.from_numpy(rng.standard_normal((300, 4096)).astype(np.float32)).cuda(), fmt, **kw)
    x = torch.randn(8, 4096, device="cuda")
    rounded = api._bind_gemv(qt, x, "mma", None, None, True, None, True)
    y = rounded({"x": x}, x)
    assert torch.equal(y, api._bind_gemv(qt, x, "mma", None, None, True, None, False)({"x": x}, x))
    g = torch.cuda.CUDAGraph()
    out = torch.empty_like(y)
    with torch.cuda.graph(g):
        out.copy_(rounded({"x": x}, x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, y)
