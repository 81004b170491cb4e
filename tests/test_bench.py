"""`qkgen bench`: the rotation rule, the byte formula, the harness, and a tiny run on the CPU.

The run uses Intel's CPU OpenCL runtime with a 256x256 tensor, so it checks the plumbing
(outputs written, positive device timings, byte counts, rotation), not any speed.
"""

import argparse
import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest

import qkgen.tools.bench as bench
from qkgen.backends import get
from qkgen.errors import QKGenError, QKGenValueError
from qkgen.tools.bench import (
    baselines,
    byte_counts,
    cases,
    gemv_case,
    harness,
    options,
    qkgen_impl,
    report,
)

L2 = 50e6
PACKAGE = Path(bench.__file__).parent


def run_bench(argv: list[str]) -> int:
    """`qkgen bench ARGV` through bench's own parser and main (the CLI only adds its mapping of
    QKGenError to exit status 2, which the CLI's tests cover)."""
    p = argparse.ArgumentParser(prog="qkgen bench")
    bench.add_arguments(p)
    return bench.main(p.parse_args(argv))


@pytest.mark.parametrize("nbytes", [1, 4096, 164_884, 2_638_084, 42_209_284, 50_000_000, 168_837_124, 10**10])
def test_rotation_sets_cover_four_l2s(nbytes):
    n = harness.rotation_sets(nbytes, L2)
    assert n >= 2
    assert n == max(2, math.ceil(4 * L2 / nbytes) + 1)
    assert n * nbytes > 4 * L2
    assert harness.covers_l2(n, nbytes, L2)


def test_rotation_sets_cap():
    # the cap bounds memory but never goes below two sets; the row then says it does not cover 4x L2
    assert harness.rotation_sets(1_000_000, L2, max_bytes=10e6) == 10
    assert not harness.covers_l2(10, 1_000_000, L2)
    assert harness.rotation_sets(10**9, L2, max_bytes=10**6) == 2
    assert harness.rotation_sets(2_638_084, L2) == 77  # 1024x1024 nf4 nested -> bf16
    with pytest.raises(QKGenValueError):
        harness.rotation_sets(0, L2)


def test_dequantize_byte_formula():
    x = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    qt = qkgen_impl.quantize_host(x, "nf4", blocksize=64, nested=True)
    nbytes, formula = byte_counts.dequantize_bytes(qt, "bf16")
    # codes n/2 + absmax_q (1 B per 64-block) + absmax2 (4 B per 256 blocks) + offset + out n*2
    assert nbytes == 65536 // 2 + 1024 + 4 * 4 + 4 + 65536 * 2 == 164_884
    assert formula.endswith("= 164884 B") and "out 65536*2 B" in formula
    qt = qkgen_impl.quantize_host(x, "q8_0")
    assert byte_counts.dequantize_bytes(qt, "f16")[0] == 2048 * 34 + 65536 * 2
    qt = qkgen_impl.quantize_host(x, "int4", scale_mode="row")
    assert byte_counts.dequantize_bytes(qt, "f32")[0] == 65536 // 2 + 256 * 4 + 65536 * 4


def test_parse_selection():
    sels = options.parse_formats(cases.DEFAULT_FORMATS)
    assert [(s.name, s.label) for s in sels] == [
        ("nf4", "nested bs64"), ("fp4", "nested bs64"), ("blockwise8", "bs256"), ("q4_0", "-"),
        ("q8_0", "-"), ("int4", "row"),
    ]  # fmt: skip
    assert options.parse_formats("nf4:plain@128,int8:group@32")[1].label == "group g32"
    assert not options.parse_formats("nf4:plain@128")[0].nested
    for bad in ("nf4:row", "q4_0:nested", "int4:row@64", "nf4@100", "nope"):
        with pytest.raises(ValueError):
            options.parse_formats(bad)
    assert options.parse_shapes("4096x4096, 1024x1024") == [(4096, 4096), (1024, 1024)]
    with pytest.raises(QKGenValueError):
        options.parse_shapes("4096x0")
    assert options.parse_dtypes("bf16,float16") == ["bf16", "f16"]


def test_registry_has_dequantize_and_harness_rotates():
    assert isinstance(cases.CASES["dequantize"], cases.BenchOp)
    made, ran = [], []

    def make_set():
        i = len(made)
        made.append(i)
        return cases.TimedSet(run=lambda: ran.append(i) or 0.25)

    samples, nsets, _ = harness.measure(cases.Impl("fake", make_set), 30_000_000, iters=7, warmup=3,
                                      l2_bytes=L2, max_bytes=2**32)  # fmt: skip
    assert nsets == len(made) == math.ceil(4 * L2 / 30e6) + 1 == 8
    assert samples == [250.0] * 7
    assert ran[:8] == list(range(8))  # every set runs once first
    assert ran[8:] == [i % 8 for i in range(10)]  # then warm-up and timed launches rotate
    with pytest.raises(QKGenError):  # a timer reading of zero is an error, never a number
        harness.measure(cases.Impl("zero", lambda: cases.TimedSet(run=lambda: 0.0)), 10**9, 3, 0, L2, 2**32)


def test_bnb_glue_matches_reference():
    torch = pytest.importorskip("torch")
    try:
        import bitsandbytes.functional as bnbf
    except Exception as e:  # bitsandbytes without a usable backend here
        pytest.skip(f"bitsandbytes: {e}")
    x = np.random.default_rng(1).standard_normal((32, 256)).astype(np.float32)
    for name, kw in [("nf4", {"nested": True}), ("fp4", {}), ("blockwise8", {"blocksize": 256})]:
        qt = qkgen_impl.quantize_host(x, name, **kw)
        for dtype in ("bf16", "f16"):
            call, _keep = baselines.bnb_dequantize_fn(bnbf, torch, qt, dtype, "cpu")
            got = call().float().reshape(qt.shape).numpy()
            want = qkgen_impl.to_f32(qkgen_impl.round_to(qkgen_impl.dequantize_host(qt), dtype), dtype)
            assert np.array_equal(got, want), (name, dtype)


def _intel_cpu():
    ocl = get("opencl")
    if not ocl.is_available():
        return None
    return next((d for d in ocl.devices() if "Intel" in d.platform and d.kind == "cpu"), None)


def test_cpu_run_writes_json_and_markdown(tmp_path, capsys):
    dev = _intel_cpu()
    if dev is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    out_json, out_md = tmp_path / "b.json", tmp_path / "b.md"
    # no --no-progress: stderr is captured, not a terminal, so there must be no progress bar anyway
    rc = run_bench(["--backend", "opencl", "--device", dev.platform, "--shapes", "256x256", "--iters", "3",
                    "--warmup", "1", "--formats", "nf4", "--copy-mb", "16", "--json", str(out_json),
                    "--markdown", str(out_md)])  # fmt: skip
    assert rc == 0
    err = capsys.readouterr().err
    assert "\r" not in err and "case/s" not in err and "bench: opencl on" in err
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
        assert r["sets"] == harness.rotation_sets(r["bytes"], l2) and r["covers_l2"]
        assert r["sets"] * r["bytes"] > 4 * l2
    ct = rep["compile_times"]
    assert [k["kernel"] for k in ct["kernels"]] == [r["kernel"] for r in rows]
    assert all(k["cold_s"] > 0 and k["warm_s"] > 0 for k in ct["kernels"]) and ct["cache_files_written"] >= 2
    md = out_md.read_text()
    assert f"on {dev.name}" in md and "copy ceiling:" in md and "date (UTC)" in md
    assert "| dequantize | nf4 | nested bs64 | bf16 | 256x256 |" in md and "= 164884 B" in md
    assert "cold s" in md


def test_plot_needs_matplotlib(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(QKGenError, match="needs matplotlib"):  # before any device is opened
            run_bench(["--shapes", "64x64", "--plot", str(tmp_path / "p.png")])
    else:
        pytest.skip("matplotlib is installed: the error path cannot be reached")


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    row = dict(status="ok", format="nf4", variant="nested bs64", dtype="bf16", shape="64x64", gbps=1.0)
    rep = {"rows": [dict(row, impl="qkgen"), dict(row, impl="bnb", gbps=0.5)], "copy_ceiling": {"gbps": 2.0},
           "backend": "opencl", "device": {"name": "test"}}  # fmt: skip
    report.plot(rep, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------------------------
# GEMV


def test_gemv_byte_formulas():
    w = np.random.default_rng(0).standard_normal((256, 512)).astype(np.float32)
    qt = qkgen_impl.quantize_host(w, "nf4", blocksize=64, nested=True)
    nbytes, formula = byte_counts.gemv_bytes(qt, 1, "bf16")
    # codes N*K/2 + absmax_q (1 B per 64-block) + absmax2 (4 B per 256 blocks) + offset + x M*K*2 + y M*N*2
    assert nbytes == 256 * 512 // 2 + 2048 + 8 * 4 + 4 + 512 * 2 + 256 * 2 == 69_156
    assert formula.startswith("codes ceil(131072*4/8) B")
    assert formula.endswith("x 1*512*2 B + y 1*256*2 B = 69156 B")
    qt = qkgen_impl.quantize_host(w, "q4_0")
    assert byte_counts.gemv_bytes(qt, 3, "f16")[0] == 4096 * 18 + 3 * 512 * 2 + 3 * 256 * 2
    qt = qkgen_impl.quantize_host(w, "int4", scale_mode="row")
    assert byte_counts.gemv_bytes(qt, 1, "f32")[0] == 256 * 512 // 2 + 256 * 4 + 512 * 4 + 256 * 4
    nbytes, formula = byte_counts.dense_gemv_bytes(256, 512, 1, "bf16")
    assert nbytes == 256 * 512 * 2 + 512 * 2 + 256 * 2 and formula.startswith("dense W 256*512*2 B")


def test_gemv_registry_selection_and_options():
    op = cases.CASES["gemv"]
    assert isinstance(op, gemv_case.GemvBench)
    assert op.default_shapes == "4096x4096,8192x8192,14336x4096,4096x14336"
    sels = options.parse_formats(op.default_formats)
    assert [(s.name, s.label) for s in sels] == [
        ("nf4", "nested bs64"), ("nf4", "bs64"), ("fp4", "nested bs64"), ("q4_0", "-"), ("q4_1", "-"),
        ("q5_0", "-"), ("q8_0", "-"), ("int4", "row"), ("blockwise8", "bs256"),
    ]  # fmt: skip
    sel = argparse.Namespace(formats=options.parse_formats("q4_0,nf4"), shapes=[(64, 48), (64, 64)],
                             dtypes=["bf16"], m=3)  # fmt: skip
    specs = op.specs(sel)  # q4_0 needs K a multiple of 32: 64x48 is skipped (and said so), nf4 is not
    assert [(s.sel.name, s.shape, s.m) for s in specs] == [
        ("q4_0", (64, 64), 3), ("nf4", (64, 48), 3), ("nf4", (64, 64), 3)]  # fmt: skip
    assert op.skipped(sel) == ["q4_0 - 64x48: K = 48 is not a multiple of q4_0's block of 32"]
    with pytest.raises(QKGenValueError):
        op.specs(argparse.Namespace(formats=sels[:1], shapes=[(4, 4, 4)], dtypes=["bf16"], m=1))
    with pytest.raises(QKGenValueError, match="--m: 9; allowed: 1..8"):
        run_bench(["--op", "gemv", "--m", "9"])


def test_gemv_check_fails_a_wrong_kernel():
    w = np.random.default_rng(2).standard_normal((300, 64)).astype(np.float32)
    x = gemv_case.gemv_x(0, 300, 64, 2, "bf16")
    check = gemv_case.gemv_checker(x, w, "bf16")
    y = (qkgen_impl.to_f32(x, "bf16").astype(np.float64) @ w.T.astype(np.float64)).astype(np.float32)
    assert check(y.reshape(-1)) < 1e-6
    y_bad = y.copy()
    y_bad[:, ::7] *= 1.5  # a wrong kernel: every 7th output off by half
    assert check(y_bad.reshape(-1)) > harness.CHECK_REL_TOL
    y_nan = y.copy()
    y_nan[1, -1] = np.nan
    assert check(y_nan.reshape(-1)) == math.inf
    # the harness turns a failed check into an error row without numbers
    spec = cases.Spec("gemv", options.parse_formats("q8_0")[0], "bf16", (300, 64), m=2)
    good = cases.Impl("qkgen", lambda: cases.TimedSet(run=lambda: 0.5, output=lambda: y), path="float",
                      check=check)  # fmt: skip
    bad = cases.Impl("qkgen int8dot", lambda: cases.TimedSet(run=lambda: 0.5, output=lambda: y_bad),
                     path="int8dot", check=check)  # fmt: skip
    ctx = argparse.Namespace(args=argparse.Namespace(iters=3, warmup=1, max_mem_gb=1.0), torch=None)
    rows = harness.run_case(ctx, cases.Case(spec, 10**6, "f", [good, bad]), None, 1e6)
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
        qt = qkgen_impl.quantize_host(w, name, **kw)
        wd = qkgen_impl.dequantize_host(qt)
        for dtype in ("bf16", "f16"):
            for m in (1, 3):
                x = gemv_case.gemv_x(0, 64, 256, m, dtype)
                # matmul_4bit only: bnb's CPU gemv_4bit kernel wants its CPU-repacked weight layout
                call, _keep = baselines.bnb_gemv_fn(bnb, bnbf, torch, qt, x, dtype, "cpu")
                y = call()
                assert tuple(y.shape) == (m, 64)
                assert y.dtype == {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
                err = gemv_case.gemv_checker(x, wd, dtype)(y.float().reshape(-1).numpy())
                assert err < 5e-3, (name, kw, dtype, m, err)
    with pytest.raises(QKGenValueError):
        baselines.bnb_gemv_fn(bnb, bnbf, torch, qkgen_impl.quantize_host(w, "nf4"), gemv_case.gemv_x(0, 64, 256, 2, "f16"),
                          "f16", "cpu", fn="gemv_4bit")  # fmt: skip


def test_gemv_m3_case_on_cpu():
    # M > 1 takes the mmax=8 kernels; a small L2 keeps the rotation short
    info = _intel_cpu()
    if info is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    from qkgen.backends import open_device

    dev = open_device("opencl", info.platform)
    args = argparse.Namespace(seed=0, iters=2, warmup=1, max_mem_gb=1.0, no_bnb=True, device=info.platform)
    ctx = cases.Context(dev, args)
    spec = cases.Spec("gemv", options.parse_formats("q8_0")[0], "f16", (96, 128), m=3)
    case = cases.CASES["gemv"].prepare(ctx, spec)
    assert case.bytes == 96 * 128 // 32 * 34 + 3 * 128 * 2 + 3 * 96 * 2
    assert case.render_kwargs["mmax"] == 8 and "mmax8" in case.impls[0].kernel
    rows = harness.run_case(ctx, case, None, 2e5)
    want = ["qkgen"] + (["qkgen int8dot"] if "q8_0" in qkgen_impl.int8dot_formats() else [])
    assert [r.impl for r in rows] == want
    for r in rows:
        assert r.status == "ok" and r.m == 3 and r.check == "pass" and r.rel_err < harness.CHECK_REL_TOL
        assert r.us_median > 0 and r.sets == harness.rotation_sets(r.bytes, 2e5)


def test_cpu_gemv_run(tmp_path):
    dev = _intel_cpu()
    if dev is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    out_json, out_md = tmp_path / "g.json", tmp_path / "g.md"
    rc = run_bench(["--op", "gemv", "--backend", "opencl", "--device", dev.platform, "--shapes", "256x512",
                    "--iters", "3", "--warmup", "1", "--formats", "nf4,q4_0", "--copy-mb", "16", "--no-progress",
                    "--no-compile-times", "--json", str(out_json), "--markdown", str(out_md)])  # fmt: skip
    assert rc == 0
    rep = json.loads(out_json.read_text())
    assert rep["settings"]["op"] == "gemv" and rep["settings"]["m"] == 1 and "--op gemv" in rep["command"]
    assert "x (M * K * sizeof) + y (M * N * sizeof)" in rep["formulas"]["gemv"]
    int8 = "q4_0" in qkgen_impl.int8dot_formats()
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
        assert r["check"] == "pass" and 0 <= r["rel_err"] < harness.CHECK_REL_TOL
        assert r["sets"] == harness.rotation_sets(r["bytes"], l2) and r["covers_l2"]
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

    monkeypatch.setattr(baselines, "torch_event_timer", cpu_timer)
    args = argparse.Namespace(seed=0, iters=2, warmup=0, max_mem_gb=1.0, no_bnb=False, device=info.platform)
    ctx = cases.Context(open_device("opencl", info.platform), args)
    ctx.torch, ctx.torch_device, ctx.bnb = torch, torch.device("cpu"), bnbf
    for fmt, want in [("nf4", ["qkgen", "bnb", "torch"]), ("blockwise8", ["qkgen", "torch"])]:
        spec = cases.Spec("gemv", options.parse_formats(fmt)[0], "bf16", (64, 256), m=3)  # M=3: no gemv_4bit row
        case = cases.CASES["gemv"].prepare(ctx, spec)
        rows = harness.run_case(ctx, case, None, 2e5)
        assert [r.impl for r in rows] == want
        for r in rows:
            assert r.status == "ok" and r.check == "pass", (r.impl, r.error)
        dense = rows[-1]
        assert dense.bytes == 64 * 256 * 2 + 3 * 256 * 2 + 3 * 64 * 2 == dense.set_bytes
        assert dense.byte_formula.startswith("dense W 64*256*2 B") and dense.kernel.startswith("torch.matmul")
        assert rows[0].bytes == case.bytes != dense.bytes


# --------------------------------------------------------------------------------------------
# Options checked before the run; device facts; the package's shape


def _args(**kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    bench.add_arguments(p)
    return argparse.Namespace(**{**vars(p.parse_args([])), **kw})


@pytest.mark.parametrize("opt", ["max_mem_gb", "l2_mb", "copy_mb"])
@pytest.mark.parametrize("value", [math.inf, math.nan, 0.0, -1.0])
def test_sizes_must_be_positive_and_finite(opt, value):
    flag = "--" + opt.replace("_", "-")
    with pytest.raises(QKGenValueError, match=f"{flag}: .*allowed: a positive finite number"):
        options.validate(_args(**{opt: value}))
    options.validate(_args(**{opt: 2.5}))


def test_unwritable_output_fails_before_the_run(tmp_path, monkeypatch):
    import importlib

    main_mod = importlib.import_module("qkgen.tools.bench.main")

    def no_run(*a, **k):
        raise AssertionError("the run started")

    monkeypatch.setattr(main_mod, "copy_ceiling", no_run)
    monkeypatch.setattr(main_mod, "Context", no_run)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    ocl = get("opencl")
    if not ocl.is_available():
        pytest.skip("needs an OpenCL device")
    for bad in (blocker / "out.json", tmp_path):  # under a file; a directory
        with pytest.raises(QKGenValueError, match="--json: "):
            run_bench(["--backend", "opencl", "--shapes", "64x64", "--json", str(bad)])
    with pytest.raises(QKGenValueError, match="--markdown: "):
        run_bench(["--backend", "opencl", "--shapes", "64x64", "--markdown", str(blocker / "x" / "b.md")])


def test_check_writable_leaves_nothing_behind(tmp_path):
    existing = tmp_path / "keep.json"
    existing.write_text("old")
    options.check_writable(existing, "--json")
    assert existing.read_text() == "old"
    options.check_writable(tmp_path / "new" / "deeper" / "b.json", "--json")  # folders are made later
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.json"]


class _FakeDevice:
    backend = "opencl"

    def __init__(self, ceiling=None, l2=None, raises=None):
        self._ceiling, self._l2, self._raises = ceiling, l2, raises

    def copy_ceiling(self, nbytes, iters=20, warmup=3):
        if self._raises:
            raise self._raises
        return self._ceiling

    def l2_bytes(self):
        if self._raises:
            raise self._raises
        return self._l2


def test_copy_ceiling_and_l2_come_from_the_device():
    got = {"gbps": 12.5, "method": "m", "buffer_bytes": 1 << 20, "all": {"m": 12.5}}
    assert harness.copy_ceiling(_FakeDevice(ceiling=got), 1.0, 3, 1) == got
    assert harness.device_l2_bytes(_FakeDevice(l2=2_000_000)) == 2_000_000
    # a device that cannot measure, fails, or reports nothing gives a note and no number
    for dev in (_FakeDevice(raises=NotImplementedError("no")), _FakeDevice(raises=RuntimeError("boom")),
                _FakeDevice(ceiling=None), object.__new__(type("Bare", (), {"backend": "sycl"}))):  # fmt: skip
        res = harness.copy_ceiling(dev, 1.0, 3, 1)
        assert res["gbps"] is None and res["note"]
        assert harness.device_l2_bytes(dev) is None


def test_package_shape():
    # one job per file, none over 400 lines; only the adapter imports qkgen's runtime, renderer,
    # format table or reference codec (their module paths are moving)
    allowed = {"qkgen.errors", "qkgen.dtypes", "qkgen.version", "qkgen.cache", "qkgen.backends"}
    for path in PACKAGE.glob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) <= 400, path.name
        if path.name == "qkgen_impl.py":
            continue
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] if node.module != "qkgen" else [f"qkgen.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                if n.startswith("qkgen") and not n.startswith("qkgen.tools.bench"):
                    assert n in allowed, f"{path.name} imports {n}"


def test_compile_times_child_runs_as_a_module(tmp_path):
    # the child is `python -m qkgen.tools.bench.compile_times SPEC`; with no kernels it only opens the device
    info = _intel_cpu()
    if info is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    from qkgen.tools.bench import compile_times

    assert compile_times._compile_run("opencl", info.platform, [], tmp_path) == []
    with pytest.raises(QKGenError, match="compile-time subprocess failed"):
        compile_times._compile_run("opencl", "no such device", [], tmp_path)
