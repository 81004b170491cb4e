"""The int8mma GEMV path on the CUDA GPU (PTX mma m16n8k32, signed bytes), W read from its blocks
(gemv_int8mma; super-block rows: gemv_int8mma_sub) and from its fragments layout (gemv_int8frag,
repacked by repack_fragments; super-block rows: gemv_int8frag_sub, repack_fragments_sub): every format x layout x dtype x M against the int8dot path's own definition (int8dot_terms: x through q8_1, the per-block terms in
float64), within the f32 bound of those terms, on sizes with row and block tails; then model-sized
torch tensors, and the same call inside a CUDA graph."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
import qkgen.runtime.api as api
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render
from qkgen.tools import check

pytestmark = pytest.mark.gpu
FORMATS = get_op("gemv_int8mma").formats()
SUB_FORMATS = get_op("gemv_int8mma_sub").formats()
DTYPES = ("f16", "bf16", "f32")


@pytest.fixture(scope="module", autouse=True)
def compiled(cuda_device):
    """The kernels built up front by parallel nvcc runs."""
    cuda_device.compile_many([render(op, f, cuda_device.target, dtype=t) for op in ("gemv_int8mma", "gemv_int8frag")
                              for f in FORMATS for t in DTYPES]
                             + [render("repack_fragments", f, cuda_device.target, dtype="u8") for f in FORMATS]
                             + [render(op, f, cuda_device.target, dtype=t) for f in SUB_FORMATS for t in DTYPES
                                for op in ("gemv_int8mma_sub", "gemv_int8frag_sub")]
                             + [render("repack_fragments_sub", f, cuda_device.target, dtype="u8") for f in SUB_FORMATS])


def _within_terms_bound(y, x, qt, dtype: str) -> bool:
    err, bound = check.int8dot_error(y, x, qt, dtype)
    return bool(np.all(err <= bound))


@pytest.fixture(params=["blocks", "fragments"])
def layout(request, monkeypatch):
    """The layout the int8mma path reads W in, whatever runtime.paths takes for the format."""
    monkeypatch.setattr(api, "default_int8mma_layout", lambda target, fmt: request.param)
    return request.param


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_int8mma_cuda(fmt, dtype, m, layout, cuda_device):
    """N = 83 (a 16-row tail) and K = 37 blocks (an odd count: the last step's second block is past
    the end, the last group is not whole)."""
    rng = np.random.default_rng(m)
    qt = qkgen.quantize(rng.standard_normal((83, 37 * 32)).astype(np.float32), fmt)
    x = check.gemv_x(rng, m, qt.shape[1], dtype)
    y = qkgen.gemv(qt, x, path="int8mma", backend="cuda")
    assert y.shape == (m, 83) and bool(qt.__dict__.get(api._FRAGMENTS)) == (layout == "fragments")
    assert _within_terms_bound(y, x, qt, dtype)


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fmt", SUB_FORMATS)
def test_int8mma_sub_cuda(fmt, dtype, m, layout):
    """Super-block rows (gemv_int8mma_sub from the blocks, gemv_int8frag_sub from fragments): N = 83
    (a 16-row tail) and K = 5 x 256 (40 chunks: the last turn's chunks past the end), MXFP4 and NVFP4
    a block more (a partial last tile of fragments)."""
    rng = np.random.default_rng(m)
    block = qkgen.formats.get(fmt).block
    qt = qkgen.quantize(rng.standard_normal((83, 5 * 256 + (block if block < 256 else 0))).astype(np.float32), fmt)
    x = check.gemv_x(rng, m, qt.shape[1], dtype)
    plans, _ = api.gemv_plans(qt, x, "int8mma", "cuda")
    assert plans[-1].ks.op == ("gemv_int8frag_sub" if layout == "fragments" else "gemv_int8mma_sub")
    y = qkgen.gemv(qt, x, path="int8mma", backend="cuda")
    assert y.shape == (m, qt.shape[0]) and bool(qt.__dict__.get(api._FRAGMENTS)) == (layout == "fragments")
    assert _within_terms_bound(y, x, qt, dtype)


# block and super-block rows in both layouts
@pytest.mark.parametrize("fmt, layout", [(f, lay) for f in ("q4_0", "q5_1", "q8_0", "q4_k", "q6_k", "mxfp4")
                                         for lay in ("blocks", "fragments")])  # fmt: skip
def test_int8mma_torch_large_and_graph(fmt, layout, torch_cuda, monkeypatch):
    """Torch tensors on a model-sized weight (448 blocks a row), the same y as the int8dot path
    within the bound, and the same call captured in a CUDA graph gives the same y."""
    monkeypatch.setattr(api, "default_int8mma_layout", lambda target, f: layout)
    torch = torch_cuda
    torch.manual_seed(0)
    qt = qkgen.quantize(torch.randn(1000, 14336, device="cuda"), fmt)
    x = torch.randn(8, 14336, device="cuda")
    y = qkgen.gemv(qt, x, path="int8mma")
    assert _within_terms_bound(y.cpu().numpy(), x.cpu().numpy(), qt.to_host(), "f32")
    g = torch.cuda.CUDAGraph()
    out = torch.empty_like(y)
    with torch.cuda.graph(g):
        out.copy_(qkgen.gemv(qt, x, path="int8mma"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, y)
