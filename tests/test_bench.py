"""`qkgen bench`: the rotation rule, the byte formula, the harness, and a tiny run on the CPU.

The run uses Intel's CPU OpenCL runtime with a 256x256 tensor, so it checks the plumbing
(outputs written, positive device timings, byte counts, rotation), not any speed.
"""

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
