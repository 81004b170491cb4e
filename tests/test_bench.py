"""`qkgen bench`: the rotation rule, the byte formula, the harness, and a tiny run on the CPU.

The run uses Intel's CPU OpenCL runtime with a 256x256 tensor, so it checks the plumbing
(outputs written, positive device timings, byte counts, rotation), not any speed.
"""

import argparse
import json
import math

import numpy as np
import pytest

from qkgen import bench, cli, reference
from qkgen.backends import get
from qkgen.errors import QKGenError, QKGenValueError

L2 = 50e6


@pytest.mark.parametrize("nbytes", [1, 4096, 164_884, 2_638_084, 42_209_284, 50_000_000, 168_837_124, 10**10])
def test_rotation_sets_cover_four_l2s(nbytes):
    n = bench.rotation_sets(nbytes, L2)
    assert n >= 2
    assert n == max(2, math.ceil(4 * L2 / nbytes) + 1)
    assert n * nbytes > 4 * L2
    assert bench.covers_l2(n, nbytes, L2)


def test_rotation_sets_cap():
    # the cap bounds memory but never goes below two sets; the row then says it does not cover 4x L2
    assert bench.rotation_sets(1_000_000, L2, max_bytes=10e6) == 10
    assert not bench.covers_l2(10, 1_000_000, L2)
    assert bench.rotation_sets(10**9, L2, max_bytes=10**6) == 2
    assert bench.rotation_sets(2_638_084, L2) == 77  # 1024x1024 nf4 nested -> bf16
    with pytest.raises(QKGenValueError):
        bench.rotation_sets(0, L2)


def test_dequantize_byte_formula():
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    qt = reference.quantize(x, "nf4", blocksize=64, nested=True)
    nbytes, formula = bench.dequantize_bytes(qt, "bf16")
    # codes n/2 + absmax_q (1 B per 64-block) + absmax2 (4 B per 256 blocks) + offset + out n*2
    assert nbytes == 65536 // 2 + 1024 + 4 * 4 + 4 + 65536 * 2 == 164_884
    assert formula.endswith("= 164884 B") and "out 65536*2 B" in formula
    qt = reference.quantize(x, "q8_0")
    assert bench.dequantize_bytes(qt, "f16")[0] == 2048 * 34 + 65536 * 2
    qt = reference.quantize(x, "int4", scale_mode="row")
    assert bench.dequantize_bytes(qt, "f32")[0] == 65536 // 2 + 256 * 4 + 65536 * 4


def test_parse_selection():
    sels = bench.parse_formats(bench.DEFAULT_FORMATS)
    assert [(s.name, s.label) for s in sels] == [
        ("nf4", "nested bs64"), ("fp4", "nested bs64"), ("blockwise8", "bs256"), ("q4_0", "-"),
        ("q8_0", "-"), ("int4", "row"),
    ]  # fmt: skip
    assert bench.parse_formats("nf4:plain@128,int8:group@32")[1].label == "group g32"
    assert not bench.parse_formats("nf4:plain@128")[0].nested
    for bad in ("nf4:row", "q4_0:nested", "int4:row@64", "nf4@100", "nope"):
        with pytest.raises(ValueError):
            bench.parse_formats(bad)
    assert bench.parse_shapes("4096x4096, 1024x1024") == [(4096, 4096), (1024, 1024)]
    with pytest.raises(QKGenValueError):
        bench.parse_shapes("4096x0")
    assert bench.parse_dtypes("bf16,float16") == ["bf16", "f16"]


def test_registry_has_dequantize_and_harness_rotates():
    assert isinstance(bench.CASES["dequantize"], bench.BenchOp)
    made, ran = [], []

    def make_set():
        i = len(made)
        made.append(i)
        return bench.TimedSet(run=lambda: ran.append(i) or 0.25)

    samples, nsets, _ = bench.measure(bench.Impl("fake", make_set), 30_000_000, iters=7, warmup=3,
                                      l2_bytes=L2, max_bytes=2**32)  # fmt: skip
    assert nsets == len(made) == math.ceil(4 * L2 / 30e6) + 1 == 8
    assert samples == [250.0] * 7
    assert ran[:8] == list(range(8))  # every set runs once first
    assert ran[8:] == [i % 8 for i in range(10)]  # then warm-up and timed launches rotate
    with pytest.raises(QKGenError):  # a timer reading of zero is an error, never a number
        bench.measure(bench.Impl("zero", lambda: bench.TimedSet(run=lambda: 0.0)), 10**9, 3, 0, L2, 2**32)


def test_bnb_glue_matches_reference():
    torch = pytest.importorskip("torch")
    try:
        import bitsandbytes.functional as bnbf
    except Exception as e:  # bitsandbytes without a usable backend here
        pytest.skip(f"bitsandbytes: {e}")
    x = np.random.default_rng(1).standard_normal((32, 256)).astype(np.float32)
    for name, kw in [("nf4", {"nested": True}), ("fp4", {}), ("blockwise8", {"blocksize": 256})]:
        qt = reference.quantize(x, name, **kw)
        for dtype in ("bf16", "f16"):
            call, _keep = bench.bnb_dequantize_fn(bnbf, torch, qt, dtype, "cpu")
            got = call().float().reshape(qt.shape).numpy()
            want = bench._to_f32(reference.round_to(reference.dequantize(qt), dtype), dtype)
            assert np.array_equal(got, want), (name, dtype)


def _intel_cpu():
    ocl = get("opencl")
    if not ocl.is_available():
        return None
    return next((d for d in ocl.devices() if "Intel" in d.platform and d.kind == "cpu"), None)


def test_cpu_run_writes_json_and_markdown(tmp_path):
    dev = _intel_cpu()
    if dev is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    out_json, out_md = tmp_path / "b.json", tmp_path / "b.md"
    rc = cli.main(["bench", "--backend", "opencl", "--device", dev.platform, "--shapes", "256x256",
                   "--iters", "3", "--warmup", "1", "--formats", "nf4", "--copy-mb", "16", "--no-progress",
                   "--json", str(out_json), "--markdown", str(out_md)])  # fmt: skip
    assert rc == 0
    rep = json.loads(out_json.read_text())
    assert rep["backend"] == "opencl" and rep["device"]["name"] == dev.name
    assert rep["date_utc"].endswith("+00:00") and "bench" in rep["command"] and "--shapes" in rep["command"]
    assert rep["copy_ceiling"]["gbps"] > 0
    rows = rep["rows"]
    assert [(r["format"], r["variant"], r["dtype"], r["impl"]) for r in rows] == [
        ("nf4", "nested bs64", "bf16", "qkgen"), ("nf4", "nested bs64", "f16", "qkgen")]  # fmt: skip
    l2 = rep["settings"]["l2_bytes"]
    for r in rows:
        assert r["status"] == "ok" and len(r["samples_us"]) == 3
        assert r["us_median"] > 0 and r["gbps"] > 0 and r["pct_copy"] > 0
        assert r["bytes"] == 164_884 and r["byte_formula"].endswith("= 164884 B")
        assert math.isclose(r["gbps"], r["bytes"] / (r["us_median"] * 1e-6) / 1e9)
        assert r["sets"] == bench.rotation_sets(r["bytes"], l2) and r["covers_l2"]
        assert r["sets"] * r["bytes"] > 4 * l2
    ct = rep["compile_times"]
    assert [k["kernel"] for k in ct["kernels"]] == [r["kernel"] for r in rows]
    assert all(k["cold_s"] > 0 and k["warm_s"] > 0 for k in ct["kernels"]) and ct["cache_files_written"] >= 2
    md = out_md.read_text()
    assert f"on {dev.name}" in md and "copy ceiling:" in md and "date (UTC)" in md
    assert "| dequantize | nf4 | nested bs64 | bf16 | 256x256 |" in md and "= 164884 B" in md
    assert "cold s" in md


def test_plot_needs_matplotlib(tmp_path, capsys):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        rc = cli.main(["bench", "--shapes", "64x64", "--plot", str(tmp_path / "p.png")])
        assert rc == 2 and "needs matplotlib" in capsys.readouterr().err
    else:
        pytest.skip("matplotlib is installed: the error path cannot be reached")


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    row = dict(status="ok", format="nf4", variant="nested bs64", dtype="bf16", shape="64x64", gbps=1.0)
    rep = {"rows": [dict(row, impl="qkgen"), dict(row, impl="bnb", gbps=0.5)], "copy_ceiling": {"gbps": 2.0},
           "backend": "opencl", "device": {"name": "test"}}  # fmt: skip
    bench.plot(rep, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------------------------
# GEMV


def test_gemv_byte_formulas():
    w = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    qt = reference.quantize(w, "nf4", blocksize=64, nested=True)
    nbytes, formula = bench.gemv_bytes(qt, 1, "bf16")
    # codes N*K/2 + absmax_q (1 B per 64-block) + absmax2 (4 B per 256 blocks) + offset + x M*K*2 + y M*N*2
    assert nbytes == 256 * 512 // 2 + 2048 + 8 * 4 + 4 + 512 * 2 + 256 * 2 == 69_156
    assert formula.startswith("codes ceil(131072*4/8) B")
    assert formula.endswith("x 1*512*2 B + y 1*256*2 B = 69156 B")
    qt = reference.quantize(w, "q4_0")
    assert bench.gemv_bytes(qt, 3, "f16")[0] == 4096 * 18 + 3 * 512 * 2 + 3 * 256 * 2
    qt = reference.quantize(w, "int4", scale_mode="row")
    assert bench.gemv_bytes(qt, 1, "f32")[0] == 256 * 512 // 2 + 256 * 4 + 512 * 4 + 256 * 4
    nbytes, formula = bench.dense_gemv_bytes(256, 512, 1, "bf16")
    assert nbytes == 256 * 512 * 2 + 512 * 2 + 256 * 2 and formula.startswith("dense W 256*512*2 B")


def test_gemv_registry_selection_and_options(capsys):
    op = bench.CASES["gemv"]
    assert isinstance(op, bench.GemvBench)
    assert op.default_shapes == "4096x4096,8192x8192,14336x4096,4096x14336"
    sels = bench.parse_formats(op.default_formats)
    assert [(s.name, s.label) for s in sels] == [
        ("nf4", "nested bs64"), ("nf4", "bs64"), ("fp4", "nested bs64"), ("q4_0", "-"), ("q4_1", "-"),
        ("q5_0", "-"), ("q8_0", "-"), ("int4", "row"), ("blockwise8", "bs256"),
    ]  # fmt: skip
    sel = argparse.Namespace(formats=bench.parse_formats("q4_0,nf4"), shapes=[(64, 48), (64, 64)],
                             dtypes=["bf16"], m=3)  # fmt: skip
    specs = op.specs(sel)  # q4_0 needs K a multiple of 32: 64x48 is skipped (and said so), nf4 is not
    assert [(s.sel.name, s.shape, s.m) for s in specs] == [
        ("q4_0", (64, 64), 3), ("nf4", (64, 48), 3), ("nf4", (64, 64), 3)]  # fmt: skip
    assert op.skipped(sel) == ["q4_0 - 64x48: K = 48 is not a multiple of q4_0's block of 32"]
    with pytest.raises(QKGenValueError):
        op.specs(argparse.Namespace(formats=sels[:1], shapes=[(4, 4, 4)], dtypes=["bf16"], m=1))
    assert cli.main(["bench", "--op", "gemv", "--m", "9"]) == 2
    assert "--m: 9; allowed: 1..8" in capsys.readouterr().err


def test_gemv_check_fails_a_wrong_kernel():
    w = np.random.default_rng(2).standard_normal((300, 64)).astype(np.float32)
    x = bench.gemv_x(0, 300, 64, 2, "bf16")
    check = bench.gemv_checker(x, w, "bf16")
    y = (bench._to_f32(x, "bf16").astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32)
    assert check(y.reshape(-1)) < 1e-6
    y_bad = y.copy()
    y_bad[:, ::7] *= 1.5  # a wrong kernel: every 7th output off by half
    assert check(y_bad.reshape(-1)) > bench.CHECK_REL_TOL
    y_nan = y.copy()
    y_nan[1, -1] = np.nan
    assert check(y_nan.reshape(-1)) == math.inf
    # the harness turns a failed check into an error row without numbers
    spec = bench.Spec("gemv", bench.parse_formats("q8_0")[0], "bf16", (300, 64), m=2)
    good = bench.Impl("qkgen", lambda: bench.TimedSet(run=lambda: 0.5, output=lambda: y), path="float",
                      check=check)  # fmt: skip
    bad = bench.Impl("qkgen int8dot", lambda: bench.TimedSet(run=lambda: 0.5, output=lambda: y_bad),
                     path="int8dot", check=check)  # fmt: skip
    ctx = argparse.Namespace(args=argparse.Namespace(iters=3, warmup=1, max_mem_gb=1.0), torch=None)
    rows = bench.run_case(ctx, bench.Case(spec, 10**6, "f", [good, bad]), None, 1e6)
    assert rows[0].status == "ok" and rows[0].check == "pass" and rows[0].us_median == 500.0
    assert rows[0].path == "float" and rows[0].m == 2
    assert rows[1].status == "error" and rows[1].check == "FAIL"
    assert "correctness check failed" in rows[1].error
    assert rows[1].us_median is None and rows[1].gbps is None and rows[1].samples_us == []


def test_bnb_gemv_glue_matches_reference():
    torch = pytest.importorskip("torch")
    try:
        import bitsandbytes as bnb
        import bitsandbytes.functional as bnbf
    except Exception as e:  # bitsandbytes without a usable backend here
        pytest.skip(f"bitsandbytes: {e}")
    w = np.random.default_rng(3).standard_normal((64, 256)).astype(np.float32)
    for name, kw in [("nf4", {"nested": True}), ("nf4", {}), ("fp4", {"nested": True})]:
        qt = reference.quantize(w, name, **kw)
        wd = reference.dequantize(qt)
        for dtype in ("bf16", "f16"):
            for m in (1, 3):
                x = bench.gemv_x(0, 64, 256, m, dtype)
                # matmul_4bit only: bnb's CPU gemv_4bit kernel wants its CPU-repacked weight layout
                call, _keep = bench.bnb_gemv_fn(bnb, bnbf, torch, qt, x, dtype, "cpu")
                y = call()
                assert tuple(y.shape) == (m, 64)
                assert y.dtype == {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
                err = bench.gemv_checker(x, wd, dtype)(y.float().reshape(-1).numpy())
                assert err < 5e-3, (name, kw, dtype, m, err)
    with pytest.raises(QKGenValueError):
        bench.bnb_gemv_fn(bnb, bnbf, torch, reference.quantize(w, "nf4"), bench.gemv_x(0, 64, 256, 2, "f16"),
                          "f16", "cpu", fn="gemv_4bit")  # fmt: skip


def test_gemv_m3_case_on_cpu():
    # M > 1 takes the mmax=8 kernels; a small L2 keeps the rotation short
    info = _intel_cpu()
    if info is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    from qkgen.backends import open_device

    dev = open_device("opencl", info.platform)
    args = argparse.Namespace(seed=0, iters=2, warmup=1, max_mem_gb=1.0, no_bnb=True, device=info.platform)
    ctx = bench.Context(dev, args)
    spec = bench.Spec("gemv", bench.parse_formats("q8_0")[0], "f16", (96, 128), m=3)
    case = bench.CASES["gemv"].prepare(ctx, spec)
    assert case.bytes == 96 * 128 // 32 * 34 + 3 * 128 * 2 + 3 * 96 * 2
    assert case.render_kwargs["mmax"] == 8 and "mmax8" in case.impls[0].kernel
    rows = bench.run_case(ctx, case, None, 2e5)
    want = ["qkgen"] + (["qkgen int8dot"] if "q8_0" in bench.int8dot_formats() else [])
    assert [r.impl for r in rows] == want
    for r in rows:
        assert r.status == "ok" and r.m == 3 and r.check == "pass" and r.rel_err < bench.CHECK_REL_TOL
        assert r.us_median > 0 and r.sets == bench.rotation_sets(r.bytes, 2e5)


def test_cpu_gemv_run(tmp_path):
    dev = _intel_cpu()
    if dev is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    out_json, out_md = tmp_path / "g.json", tmp_path / "g.md"
    rc = cli.main(["bench", "--op", "gemv", "--backend", "opencl", "--device", dev.platform, "--shapes",
                   "256x512", "--iters", "3", "--warmup", "1", "--formats", "nf4,q4_0", "--copy-mb", "16",
                   "--no-progress", "--no-compile-times", "--json", str(out_json), "--markdown",
                   str(out_md)])  # fmt: skip
    assert rc == 0
    rep = json.loads(out_json.read_text())
    assert rep["settings"]["op"] == "gemv" and rep["settings"]["m"] == 1 and "--op gemv" in rep["command"]
    assert "x (M * K * sizeof) + y (M * N * sizeof)" in rep["formulas"]["gemv"]
    int8 = "q4_0" in bench.int8dot_formats()
    want = [("nf4", "nested bs64", "bf16", "qkgen", "float"), ("nf4", "nested bs64", "f16", "qkgen", "float")]
    for dt in ("bf16", "f16"):
        want.append(("q4_0", "-", dt, "qkgen", "float"))
        if int8:
            want.append(("q4_0", "-", dt, "qkgen int8dot", "int8dot"))
    rows = rep["rows"]
    assert [(r["format"], r["variant"], r["dtype"], r["impl"], r["path"]) for r in rows] == want
    l2 = rep["settings"]["l2_bytes"]
    for r in rows:
        assert r["status"] == "ok" and r["shape"] == "256x512" and r["m"] == 1
        assert len(r["samples_us"]) == 3
        assert r["us_median"] > 0 and r["gbps"] > 0 and r["pct_copy"] > 0
        assert math.isclose(r["gbps"], r["bytes"] / (r["us_median"] * 1e-6) / 1e9)
        assert r["check"] == "pass" and 0 <= r["rel_err"] < bench.CHECK_REL_TOL
        assert r["sets"] == bench.rotation_sets(r["bytes"], l2) and r["covers_l2"]
        nf4 = r["format"] == "nf4"
        assert r["bytes"] == (69_156 if nf4 else 4096 * 18 + 512 * 2 + 256 * 2)
        assert r["byte_formula"].endswith(f"+ x 1*512*2 B + y 1*256*2 B = {r['bytes']} B")
    md = out_md.read_text()
    assert "| nf4 | nested bs64 | bf16 | 256x512 | 1 | qkgen | float | `gemv_nf4_nested_bs64_bf16_mmax1` |" \
        in md
    assert "- bytes, gemv: packed codes + statistics + x (M * K * sizeof)" in md and "= 69156 B" in md
    if int8:
        assert "| q4_0 | - | f16 | 256x512 | 1 | qkgen int8dot | int8dot |" in md


def test_gemv_bnb_and_torch_rows_with_cpu_torch(monkeypatch):
    # The CUDA-only rows, run through torch on the CPU: CPU timer instead of CUDA events.
    torch = pytest.importorskip("torch")
    try:
        import bitsandbytes.functional as bnbf
    except Exception as e:
        pytest.skip(f"bitsandbytes: {e}")
    info = _intel_cpu()
    if info is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    import time

    from qkgen.backends import open_device

    def cpu_timer(_torch, fn):
        def run():
            t0 = time.perf_counter()
            fn()
            return max((time.perf_counter() - t0) * 1e3, 1e-6)

        return run

    monkeypatch.setattr(bench, "_torch_event_timer", cpu_timer)
    args = argparse.Namespace(seed=0, iters=2, warmup=0, max_mem_gb=1.0, no_bnb=False, device=info.platform)
    ctx = bench.Context(open_device("opencl", info.platform), args)
    ctx.torch, ctx.torch_device, ctx.bnb = torch, torch.device("cpu"), bnbf
    for fmt, want in [("nf4", ["qkgen", "bnb", "torch"]), ("blockwise8", ["qkgen", "torch"])]:
        spec = bench.Spec("gemv", bench.parse_formats(fmt)[0], "bf16", (64, 256), m=3)  # M=3: no gemv_4bit row
        case = bench.CASES["gemv"].prepare(ctx, spec)
        rows = bench.run_case(ctx, case, None, 2e5)
        assert [r.impl for r in rows] == want
        for r in rows:
            assert r.status == "ok" and r.check == "pass", (r.impl, r.error)
        dense = rows[-1]
        assert dense.bytes == 64 * 256 * 2 + 3 * 256 * 2 + 3 * 64 * 2 == dense.set_bytes
        assert dense.byte_formula.startswith("dense W 64*256*2 B") and dense.kernel.startswith("torch.matmul")
        assert rows[0].bytes == case.bytes != dense.bytes
