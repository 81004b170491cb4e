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


class FakeCtx:
    """What the harness needs of a Context, without a device: args, the timing method, sync()."""

    def __init__(self, timing="events", **args):
        defaults = dict(iters=7, warmup=3, max_mem_gb=4.0, modes=("cold", "hot"), launches=10, host_calls=0)
        self.args = argparse.Namespace(**{**defaults, **args})
        self.timing, self.timing_note, self.torch, self.torch_cuda = timing, "", None, False
        self.synced, self.notes = 0, []

    def sync(self):
        self.synced += 1

    def note_once(self, note):
        self.notes.append(note)


def test_registry_has_dequantize_and_harness_rotates():
    assert isinstance(cases.CASES["dequantize"], cases.BenchOp)
    made, ran = [], []

    def make_set():
        i = len(made)
        made.append(i)
        return cases.TimedSet(run=lambda: ran.append(i) or 0.25)

    ctx = FakeCtx()  # per-launch events: the fallback timer
    res = harness.measure(ctx, cases.Impl("fake", make_set), 30_000_000, l2_bytes=L2, max_bytes=2**32)
    assert res.sets == len(made) == math.ceil(4 * L2 / 30e6) + 1 == 8
    assert res.samples["cold"].us == res.samples["hot"].us == [250.0] * 7
    assert res.samples["cold"].method == "events" and res.samples["cold"].launches == 1
    assert ran[:8] == list(range(8)) and ctx.synced >= 1  # every set runs once first
    assert ran[8:18] == [i % 8 for i in range(10)]  # cold: warm-up and timed launches rotate
    assert ran[18:28] == [0] * 10  # hot: set 0 every time
    hot_only = FakeCtx(modes=("hot",))
    made.clear()
    assert harness.measure(hot_only, cases.Impl("fake", make_set), 30_000_000, L2, 2**32).sets == len(made) == 1
    with pytest.raises(QKGenError):  # a timer reading of zero is an error, never a number
        harness.measure(ctx, cases.Impl("zero", lambda: cases.TimedSet(run=lambda: 0.0)), 10**9, L2, 2**32)


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
                    "--warmup", "1", "--formats", "nf4", "--copy-mb", "16", "--l2-mb", "2", "--launches", "8",
                    "--host-calls", "5", "--json", str(out_json), "--markdown", str(out_md)])  # fmt: skip
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
    assert rep["settings"]["timing"] == "span" and "first launch's start to last launch's end" in \
        rep["settings"]["timing_label"]
    for r in rows:
        assert r["status"] == "ok" and len(r["samples_us"]) == 3 and r["timing"] == "span"
        assert r["us_median"] == r["us_cold"] > 0 and r["us_hot"] > 0 and r["gbps"] > 0 and r["pct_copy"] > 0
        assert r["check"] == "pass" and r["rel_err"] == 0  # bit-exact with the reference codec
        assert r["host_us_per_call"] > 0 and r["host_calls"] == 5 and r["host_call"].startswith("qkgen.dequantize")
        assert r["bytes"] == 164_884 and r["byte_formula"].endswith("= 164884 B")
        assert math.isclose(r["gbps"], r["bytes"] / (r["us_median"] * 1e-6) / 1e9)
        assert r["sets"] == harness.rotation_sets(r["bytes"], l2) and r["covers_l2"]
        assert r["sets"] * r["bytes"] > 4 * l2
    ct = rep["compile_times"]
    assert [k["kernel"] for k in ct["kernels"]] == [r["kernel"] for r in rows]
    assert all(k["cold_s"] > 0 and k["warm_s"] > 0 for k in ct["kernels"]) and ct["cache_files_written"] >= 2
    md = out_md.read_text()
    assert f"on {dev.name}" in md and "copy ceiling:" in md and "date (UTC)" in md
    assert "| nf4 | nested bs64 | bf16 | 256x256 | - | qkgen | `dequantize_nf4" in md and "= 164884 B" in md
    assert "| device µs (hot) | device µs (cold) | % copy | host µs/call | check |" in md
    assert "pass (exact)" in md and f"{dev.name} (opencl), {rep['date_utc']}: `{rep['command']}`" in md
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
    row = dict(status="ok", format="nf4", variant="nested bs64", dtype="bf16", shape="64x64", pct_copy=50.0)
    rows = [dict(row, impl="qkgen", m=m) for m in (1, 2, 4, 8)] + [dict(row, impl="bnb", m=1, pct_copy=20.0),
                                                                dict(row, impl="qkgen", dtype="f16", m=1)]
    rep = {"rows": rows, "copy_ceiling": {"gbps": 2.0}, "backend": "opencl", "device": {"name": "test"}}
    report.plot(rep, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


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


def test_summary_keeps_a_failed_default_row():
    """The headline table does not hide a case whose default path failed: its line says error."""
    from qkgen.tools.bench import tables

    base = dict(op="gemv", format="q4_0", variant="-", dtype="f16", shape="64x64", m=1, status="ok", path="float",
                us_cold=10.0, us_hot=9.0, pct_copy=50.0, host_us_per_call=20.0, default=False)  # fmt: skip
    rows = [dict(base, impl="qkgen"), dict(base, impl="qkgen int8dot", path="int8dot", default=True, status="error",
                                           us_cold=None, us_hot=None, pct_copy=None),
            dict(base, impl="torch", us_cold=30.0)]  # fmt: skip
    lines = tables.summary({"rows": rows})
    (line,) = [ln for ln in lines if ln.startswith("| q4_0")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[5:8] == ["int8dot", "error", "error"] and cells[10] == "qkgen: 10.0" and cells[12] == "-"
    ok = [dict(r, default=r["impl"] == "qkgen") for r in rows[:1]] + rows[2:]
    (line,) = [ln for ln in tables.summary({"rows": ok}) if ln.startswith("| q4_0")]
    assert "| the default |" in line and "30.0 (3.00x)" in line
