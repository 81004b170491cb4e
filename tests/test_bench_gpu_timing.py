"""The CUDA-graph timing path of `qkgen bench` (GPU machine only: `pytest -m gpu tests/test_bench_gpu_timing.py`).

qkgen's sets hold torch CUDA tensors, so its launches go through libcuda on torch's current stream
and are captured into a torch.cuda.CUDAGraph like bitsandbytes' and torch's calls."""

import argparse
import json

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from qkgen.backends import get

    if not get("cuda").is_available():
        pytest.skip(f"qkgen's CUDA backend: {get('cuda').why_unavailable()}")
    return torch


def test_qkgen_launches_are_captured_and_replayed():
    torch = _cuda()
    from qkgen.backends import open_device
    from qkgen.tools.bench import cases, harness, options, timing

    dev = open_device("cuda", 0)
    ctx = cases.Context(dev, argparse.Namespace(seed=0, iters=5, warmup=2, max_mem_gb=2.0, device=0, launches=20,
                                                host_calls=50))  # fmt: skip
    assert ctx.timing == "graph" and ctx.torch_cuda
    spec = cases.Spec("gemv", options.parse_formats("q4_0")[0], "f16", (4096, 4096), m=1)
    case = cases.CASES["gemv"].prepare(ctx, spec)
    for impl in case.impls[:1] + [i for i in case.impls if i.impl == "qkgen int8dot"]:
        s = impl.make_set()
        s.launch()
        ctx.sync()
        want = s.output()
        y = s.keep[2]  # the output tensor: zero it, replay the captured launches, get the same result
        us = timing.graph_samples(torch, [s.launch] * 4, reps=2, warmup=0)
        y.zero_()
        us += timing.graph_samples(torch, [s.launch], reps=1, warmup=1)
        assert all(u > 0 for u in us)
        np.testing.assert_array_equal(s.output(), want)
    rows = harness.run_case(ctx, case, 3000.0, 50e6)
    for r in rows:
        assert r.status == "ok", (r.impl, r.error)
        assert r.timing == "graph", (r.impl, r.timing_note)
        assert r.us_hot > 0 and r.us_cold > 0 and r.host_us_per_call > 0 and r.covers_l2
        assert r.launches_cold % r.sets == 0


def test_gemv_run_on_cuda(tmp_path):
    _cuda()
    from .test_bench import run_bench

    out = tmp_path / "g.json"
    argv = ["--op", "gemv", "--backend", "cuda", "--shapes", "4096x4096", "--formats", "nf4,q4_0", "--dtypes",
            "bf16", "--m", "1,8", "--iters", "5", "--warmup", "2", "--launches", "20", "--host-calls", "50",
            "--no-compile-times", "--json", str(out), "--markdown", str(tmp_path / "g.md")]  # fmt: skip
    if _has_mpl():
        argv += ["--plot", str(tmp_path / "g.png")]
    assert run_bench(argv) == 0
    rep = json.loads(out.read_text())
    assert rep["settings"]["timing"] == "graph"
    assert {"qkgen", "torch"} <= {r["impl"] for r in rep["rows"]}
    for r in rep["rows"]:
        assert r["status"] == "ok" and r["us_hot"] > 0 and r["us_cold"] > 0, r
        assert r["timing"] == "graph" or r["timing_note"], r  # a fallback says why
    if _has_mpl():
        assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def _has_mpl():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True
