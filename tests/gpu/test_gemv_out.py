"""qkgen.gemv(..., out=y) and qkgen.dequantize(..., out=w) with torch CUDA tensors: the result
written in place and returned, bit-equal to the call that allocates, on every path, cold (the
binding call) and warm, in a CUDA graph too; outputs that are not what the call would make are
refused by name before anything runs."""

from __future__ import annotations

import numpy as np
import pytest

import qkgen
from qkgen.errors import QKGenValueError
from qkgen.formats import reference

pytestmark = pytest.mark.gpu
K, N = 512, 96


def _on_cuda(torch, qt):
    return qt.with_arrays(**{k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in qt.arrays().items()})


@pytest.mark.parametrize("fmt, path", [("q4_0", "float"), ("q4_0", "int8dot"), ("q5_1", "int8mma"), ("nf4", "mma"),
                                       ("q4_k", None)])  # fmt: skip
@pytest.mark.parametrize("m, dtype", [(1, "float16"), (3, "float32"), (2, "bfloat16")])
def test_out_is_written_and_returned(torch_cuda, fmt, path, m, dtype):
    torch = torch_cuda
    qt = _on_cuda(torch, reference.quantize(np.random.default_rng(1).standard_normal((N, K)).astype(np.float32), fmt))
    for i in range(3):  # the first call binds with out given; the later ones are warm
        x = torch.randn(m, K, device="cuda", dtype=getattr(torch, dtype))
        out = torch.full((m, N), float("nan"), device="cuda", dtype=x.dtype)
        y = qkgen.gemv(qt, x, path=path, out=out)
        want = qkgen.gemv(qt, x, path=path)
        torch.cuda.synchronize()
        assert y is out and torch.equal(out, want), (i, (out.float() - want.float()).abs().max())


def test_out_in_a_cuda_graph(torch_cuda):
    torch = torch_cuda
    qt = _on_cuda(torch, reference.quantize(np.random.default_rng(2).standard_normal((N, K)).astype(np.float32), "q4_0"))
    x = torch.randn(1, K, device="cuda", dtype=torch.float16)
    out = torch.empty(1, N, device="cuda", dtype=torch.float16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        qkgen.gemv(qt, x, out=out)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        qkgen.gemv(qt, x, out=out)
    for _ in range(2):
        x.copy_(torch.randn(1, K, device="cuda", dtype=torch.float16))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, qkgen.gemv(qt, x))


def test_bad_out_is_refused_by_name(torch_cuda):
    torch = torch_cuda
    qt = _on_cuda(torch, reference.quantize(np.random.default_rng(3).standard_normal((N, K)).astype(np.float32), "q8_0"))
    x = torch.randn(2, K, device="cuda", dtype=torch.float16)
    qkgen.gemv(qt, x)  # bound: the refusals below are the warm call's
    big = torch.empty(2, 2 * N, device="cuda", dtype=torch.float16)
    bad = {
        "dtype": torch.empty(2, N, device="cuda", dtype=torch.float32),
        "shape": torch.empty(N, 2, device="cuda", dtype=torch.float16),
        "host": torch.empty(2, N, dtype=torch.float16),
        "strided": big[:, ::2],
        "grad": torch.empty(2, N, device="cuda", dtype=torch.float16, requires_grad=True),
        "numpy": np.empty((2, N), np.float16),
    }
    for what, out in bad.items():
        with pytest.raises(QKGenValueError, match="^out: "):
            qkgen.gemv(qt, x, out=out)
    flat = torch.randn(2 * K + 2 * N, device="cuda", dtype=torch.float16)
    with pytest.raises(QKGenValueError, match="^out: overlaps x"):  # out starts inside x's second row
        qkgen.gemv(qt, flat[: 2 * K].view(2, K), out=flat[K : K + 2 * N].view(2, N))
    with pytest.raises(QKGenValueError, match="^out: "):  # numpy x: the call makes its own outputs
        qkgen.gemv(reference.quantize(np.ones((N, K), np.float32), "q8_0"), np.ones((1, K), np.float32),
                   out=np.empty((1, N), np.float32))


@pytest.mark.parametrize("fmt, opts, dtype", [("nf4", {"nested": True}, "bfloat16"), ("q6_k", {}, "float16"),
                                              ("int4", {"scale_mode": "group", "blocksize": 128}, "float32")])  # fmt: skip
def test_dequantize_out(torch_cuda, fmt, opts, dtype):
    torch = torch_cuda
    n, k = 64, 512
    qt = _on_cuda(torch, reference.quantize(np.random.default_rng(4).standard_normal((n, k)).astype(np.float32), fmt,
                                            **opts))  # fmt: skip
    name = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[dtype]
    for _ in range(2):  # binding, then warm
        out = torch.full((n, k), float("nan"), device="cuda", dtype=getattr(torch, dtype))
        got = qkgen.dequantize(qt, name, out=out)
        assert got is out and torch.equal(out, qkgen.dequantize(qt, name))
    with pytest.raises(QKGenValueError, match="^out: "):
        qkgen.dequantize(qt, name, out=torch.empty((k, n), device="cuda", dtype=getattr(torch, dtype)))
