"""`qkgen bench --op gemv`: byte formulas, selection (M lists), checks, and small runs on the CPU
(Intel's CPU OpenCL runtime; bitsandbytes and dense torch through CPU torch)."""

import argparse
import json
import math

import numpy as np
import pytest

from qkgen.backends import open_device
from qkgen.errors import QKGenValueError
from qkgen.runtime import api
from qkgen.tools.bench import baselines, byte_counts, cases, gemv_case, harness, options, qkgen_impl
from .test_bench import FakeCtx, _intel_cpu, run_bench


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
    ctx = FakeCtx(iters=3, warmup=1, max_mem_gb=1.0)
    rows = harness.run_case(ctx, cases.Case(spec, 10**6, "f", [good, bad]), None, 1e6)
    assert rows[0].status == "ok" and rows[0].check == "pass" and rows[0].us_median == 500.0
    assert rows[0].path == "float" and rows[0].m == 2 and rows[0].us_hot == rows[0].us_cold == 500.0
    assert rows[1].status == "error" and rows[1].check == "FAIL"
    assert "correctness check failed" in rows[1].error
    assert rows[1].us_median is None and rows[1].gbps is None and rows[1].samples_us == []
    assert rows[1].us_hot is None and rows[1].us_cold is None and rows[1].samples_cold_us == []


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
    args = argparse.Namespace(seed=0, iters=2, warmup=1, max_mem_gb=1.0, no_bnb=True, device=info.platform,
                              launches=4, host_calls=3)  # fmt: skip
    ctx = cases.Context(dev, args)
    assert ctx.timing == "span" and args.modes == ("cold", "hot")
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
        assert r.us_hot > 0 and r.timing == "span" and r.host_us_per_call > 0


def test_cpu_gemv_run(tmp_path):
    # two M values, hot and cold by event spans, the host column (f16 x as a pyopencl array; bf16 x
    # has no OpenCL device-array form, which the report says)
    dev = _intel_cpu()
    if dev is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    out_json, out_md = tmp_path / "g.json", tmp_path / "g.md"
    rc = run_bench(["--op", "gemv", "--backend", "opencl", "--device", dev.platform, "--shapes", "256x512",
                    "--iters", "3", "--warmup", "1", "--formats", "nf4,q4_0", "--copy-mb", "16", "--no-progress",
                    "--m", "1,3", "--l2-mb", "2", "--launches", "8", "--host-calls", "6", "--no-compile-times",
                    "--json", str(out_json), "--markdown", str(out_md)])  # fmt: skip
    assert rc == 0
    rep = json.loads(out_json.read_text())
    s = rep["settings"]
    assert s["op"] == "gemv" and s["m"] == [1, 3] and "--op gemv" in rep["command"] and "--m 1,3" in rep["command"]
    assert s["timing"] == "span" and s["modes"] == ["cold", "hot"] and s["launches"] == 8 and s["host_calls"] == 6
    assert "x (M * K * sizeof) + y (M * N * sizeof)" in rep["formulas"]["gemv"]
    int8 = "q4_0" in qkgen_impl.int8dot_formats()
    want = []
    for fmt, var in (("nf4", "nested bs64"), ("q4_0", "-")):
        for m in (1, 3):
            for dt in ("bf16", "f16"):
                want.append((fmt, var, m, dt, "qkgen", "float"))
                if fmt == "nf4" and m == 1 and dt == "f16":  # f16 arithmetic there, no bf16's
                    want.append((fmt, var, m, dt, "qkgen pairs", "pairs"))
                if int8 and fmt == "q4_0":
                    want.append((fmt, var, m, dt, "qkgen int8dot", "int8dot"))
    rows = rep["rows"]
    assert [(r["format"], r["variant"], r["m"], r["dtype"], r["impl"], r["path"]) for r in rows] == want
    l2 = s["l2_bytes"]
    for r in rows:
        m = r["m"]
        assert r["status"] == "ok" and r["shape"] == "256x512" and r["timing"] == "span" and r["primary"] == "cold"
        assert len(r["samples_cold_us"]) == len(r["samples_hot_us"]) == 3 and r["samples_us"] == r["samples_cold_us"]
        assert r["us_hot"] > 0 and r["us_cold"] == r["us_median"] > 0 and r["gbps"] > 0 and r["pct_copy"] > 0
        assert math.isclose(r["gbps"], r["bytes"] / (r["us_median"] * 1e-6) / 1e9)
        assert math.isclose(r["pct_copy_hot"] / r["pct_copy_cold"], r["us_cold"] / r["us_hot"])
        assert r["check"] == "pass" and 0 <= r["rel_err"] < harness.CHECK_REL_TOL
        assert r["sets"] == harness.rotation_sets(r["bytes"], l2) and r["covers_l2"]
        assert r["launches_cold"] % r["sets"] == 0 and r["launches_cold"] >= 8 and r["launches_hot"] == 8
        if r["dtype"] == "f16":
            assert r["host_us_per_call"] > 0 and r["host_calls"] == 6 and "qkgen.gemv(qt, x, path=" in r["host_call"]
        else:
            assert r["host_us_per_call"] is None and "bf16" in r["host_note"]
        nf4 = r["format"] == "nf4"
        assert r["bytes"] == (65536 + 2048 + 32 + 4 if nf4 else 4096 * 18) + m * 512 * 2 + m * 256 * 2
        assert r["byte_formula"].endswith(f"+ x {m}*512*2 B + y {m}*256*2 B = {r['bytes']} B")
    # one row of each case is the public call's default, and the summary leads with it
    opened = open_device("opencl", dev.platform)
    for fmt, m, dt in {(r["format"], r["m"], r["dtype"]) for r in rows}:
        marked = [r for r in rows if (r["format"], r["m"], r["dtype"]) == (fmt, m, dt) and r["default"]]
        nested = {"nested": True} if "nested" in marked[0]["variant"] else {}
        qt = qkgen_impl.quantize_host(np.ones((256, 512), np.float32), fmt, **nested)
        assert [r["path"] for r in marked] == [qkgen_impl.default_gemv_path(opened, qt, m, dt)], (fmt, m, dt)
        if dt == "f16":  # the kernels the public call itself plans when told no path
            plans, _ = api.gemv_plans(qt, np.ones((m, 512), np.float16), path=None, backend="opencl",
                                      device=dev.platform)  # fmt: skip
            assert marked[0]["kernel"] == " + ".join(p.ks.name for p in plans), (fmt, m)
    md = out_md.read_text()
    head = "| format | variant | dtype | shape | M | impl"
    top = md[md.index("## Summary: the default path against the others"):md.index(head)]
    assert sum(line.startswith(("| nf4 |", "| q4_0 |")) for line in top.splitlines()) == 8
    assert "| nf4 | nested bs64 | bf16 | 256x512 | 1 | qkgen" in md
    assert "`gemv_nf4_nested_bs64_bf16_mmax1` |" in md
    assert any(f"| 3 | qkgen{d} | `gemv_nf4_nested_bs64_f16_mmax8` |" in md for d in ("", " [default]"))
    assert "- bytes, gemv: packed codes + statistics + x (M * K * sizeof)" in md and "= 69156 B" in md
    assert "- host µs/call n/a (" in md and "rows): bf16 activations cannot be passed" in md
    if int8:
        assert "| q4_0 | - | f16 | 256x512 | 1 | qkgen int8dot" in md and "int8dot | `quantize_q8_1" in md


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
    args = argparse.Namespace(seed=0, iters=2, warmup=0, max_mem_gb=1.0, no_bnb=False, device=info.platform,
                              launches=4, host_calls=3)  # fmt: skip
    ctx = cases.Context(open_device("opencl", info.platform), args)
    ctx.torch, ctx.torch_device, ctx.bnb = torch, torch.device("cpu"), bnbf
    for fmt, want in [("nf4", ["qkgen", "bnb", "torch"]), ("blockwise8", ["qkgen", "torch"])]:
        spec = cases.Spec("gemv", options.parse_formats(fmt)[0], "bf16", (64, 256), m=3)  # M=3: no gemv_4bit row
        case = cases.CASES["gemv"].prepare(ctx, spec)
        rows = harness.run_case(ctx, case, None, 2e5)
        assert [r.impl for r in rows] == want
        for r in rows:
            assert r.status == "ok" and r.check == "pass", (r.impl, r.error)
            assert r.us_hot > 0 and r.us_cold > 0, r.impl
            # bf16 x has no OpenCL device-array form for qkgen.gemv; torch's calls take CPU tensors
            assert (r.host_us_per_call is None and "bf16" in r.host_note) if r.impl == "qkgen" else \
                r.host_us_per_call > 0, r.impl
        # qkgen's launches carry OpenCL events; torch's CPU calls do not: labelled per-launch fallback
        assert rows[0].timing == "span" and rows[0].timing_note == ""
        for r in rows[1:]:
            assert r.timing == "events" and r.timing_note.startswith("fallback: span timing failed"), r.impl
        assert rows[-1].host_call == "torch.matmul(x, Wd.t())"
        dense = rows[-1]
        assert dense.bytes == 64 * 256 * 2 + 3 * 256 * 2 + 3 * 64 * 2 == dense.set_bytes
        assert dense.byte_formula.startswith("dense W 64*256*2 B") and dense.kernel.startswith("torch.matmul")
        assert rows[0].bytes == case.bytes != dense.bytes




@pytest.mark.parametrize("path, fragments", [("int8dot", False), ("int8mma", False), ("int8mma", True)])
def test_gemv_path_sets_on_the_cpu_device(path, fragments, monkeypatch):
    """A GemvPath set (what the int8dot and int8mma rows time: x -> q8_1, then the product; the
    fragments layout made once for the set's weight copy) gives y within the check's tolerance."""
    import qkgen.runtime.paths as paths
    from qkgen.backends import open_device

    if _intel_cpu() is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    if fragments:  # runtime.paths takes fragments on CUDA only; this device's rows read them too here
        monkeypatch.setattr(paths, "INT8MMA_FRAGMENTS", {"opencl": frozenset({"q8_0"})})
    dev = open_device("opencl", _intel_cpu().name)
    w = np.random.default_rng(5).standard_normal((40, 320)).astype(np.float32)
    qt = qkgen_impl.quantize_host(w, "q8_0")
    x = gemv_case.gemv_x(0, 40, 320, 3, "f32")
    kern = qkgen_impl.GemvPath(dev, qt, x, "f32", path)
    # x's q8_1 blocks: 10 a row, padded to 12 in the fragments layout gemv_int8frag reads
    assert ("gemv_int8frag" in kern.name) == fragments and len(kern.kernels) == 2
    assert kern.x_copy == "q8_1" and kern.xq_bytes == 3 * (12 if fragments else 10) * 36
    y_buf, y = dev.empty(3 * 40, "f32")
    launches = kern.bind(y_buf)
    assert launches.time_ms() > 0
    check = gemv_case.gemv_checker(x, qkgen_impl.dequantize_host(qt), "f32")
    assert check(dev.download(y, "f32", 3 * 40)) < harness.CHECK_REL_TOL
    assert qkgen_impl.GemvPath.applies(qt, 320, "int8mma", dev.target, "f32", 1) is False  # no warp matrix instructions
    assert qkgen_impl.GemvPath.applies(qt, 320, "int8dot", dev.target, "f32", 1)


def test_mma_path_with_x_rounded_first_times_both_launches(monkeypatch):
    """The mma path with f32 x rounded to f16 by a launch of its own (round_x, taken here by patching
    runtime.paths for this device's kind): the bench's set holds both launches, the f16 copy of x
    made by the first and read by the second, and y passes the check."""
    import qkgen.runtime.paths as paths
    from qkgen.backends import open_device

    if _intel_cpu() is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    monkeypatch.setattr(paths, "MMA_ROUND_X", {"opencl": {"nf4": 2}})
    dev = open_device("opencl", _intel_cpu().name)
    w = np.random.default_rng(6).standard_normal((40, 256)).astype(np.float32)
    qt = qkgen_impl.quantize_host(w, "nf4")
    x = gemv_case.gemv_x(0, 40, 256, 3, "f32")
    kern = qkgen_impl.GemvPath(dev, qt, x, "f32", "mma")
    assert kern.x_copy == "f16" and kern.xq_bytes == 3 * 256 * 2 and "round_to_f16_f32 + gemv_mma" in kern.name
    y_buf, y = dev.empty(3 * 40, "f32")
    assert kern.bind(y_buf).time_ms() > 0
    check = gemv_case.gemv_checker(x, qkgen_impl.dequantize_host(qt), "f32")
    assert check(dev.download(y, "f32", 3 * 40)) < harness.CHECK_REL_TOL
