"""How bench times: event spans over back-to-back launches (OpenCL/SYCL), per-launch events as a
labelled fallback, the host µs-per-call column, the method per backend, the options, and the
report's keys. The OpenCL paths run on Intel's CPU OpenCL device (pocl cannot build the kernels)."""

import argparse

import numpy as np
import pytest

from qkgen.errors import QKGenValueError
from qkgen.tools.bench import cases, harness, options, qkgen_impl, report, timing

from .test_bench import FakeCtx, _intel_cpu, run_bench


class FakeEvent:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def profile_ns(self):  # the SYCL event's interface
        return self.start, self.end


def _clock_launch(clock, ns, gap=0):
    """A launch that takes `ns` device ns after a `gap`, on one in-order queue."""

    def launch():
        start = clock[0] + gap
        clock[0] = start + ns
        return [FakeEvent(start, clock[0])]

    return launch


def test_span_is_first_start_to_last_end_over_count():
    clock = [0]
    seq = [_clock_launch(clock, 2000, gap=500)] * 10
    syncs = []
    us = timing.span_samples(seq, reps=3, warmup=1, sync=lambda: syncs.append(1))
    # 10 launches: the first gap falls before the first start, the other nine inside the span
    assert us == [pytest.approx((10 * 2000 + 9 * 500) / 10 / 1e3)] * 3
    assert len(syncs) == 4  # after the warm-up, after each sample
    with pytest.raises(Exception, match="no event"):
        timing.span_samples([lambda: None], 1, 0, lambda: None)


def test_sequence_length_is_whole_passes():
    assert timing.sequence_length(1, 100) == 100
    assert timing.sequence_length(8, 100) == 104 and timing.sequence_length(77, 20) == 77
    assert timing.sequence_length(25, 100) == 100


class FakeTorch:
    """torch.cuda's events and synchronize over a fake stream clock (ms, as torch's elapsed_time)."""

    def __init__(self, clock):
        clock_ref, self.syncs = clock, []

        class Event:
            def __init__(self, enable_timing=False):
                assert enable_timing
                self.t = None

            def record(self):
                self.t = clock_ref[0]

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return (other.t - self.t) * 1e-6  # ns -> ms

        self.cuda = argparse.Namespace(Event=Event, synchronize=lambda: self.syncs.append(1))


def test_cuda_span_is_events_around_the_launches_over_count():
    clock = [0]

    def launch():  # 2500 ns a launch on the stream's clock
        clock[0] += 2500

    fake = FakeTorch(clock)
    us = timing.stream_span_samples(fake, [launch] * 4, reps=3, warmup=2)
    assert us == [2.5, 2.5, 2.5] and clock[0] == 2500 * 4 * 5 and fake.syncs == [1]


def test_cuda_span_through_the_harness():
    # a torch-driven CUDA context takes the stream span; its sets' launches return nothing
    clock = [0]
    ctx = FakeCtx(timing="span", iters=2, warmup=0, launches=4, modes=("hot",))
    ctx.torch, ctx.torch_cuda = FakeTorch(clock), True

    def tick():
        clock[0] += 1000

    impl = argparse.Namespace(make_set=lambda: cases.TimedSet(run=lambda: 1.0, launch=tick), host=None)
    smp = harness._time_mode(ctx, "span", [impl.make_set()], "hot")
    assert smp.method == "span" and smp.us == [1.0, 1.0] and smp.launches == 4


def test_span_fallback_is_labelled():
    # span on sets whose launch gives no events: per-launch events, with the reason
    ctx = FakeCtx(timing="span", iters=2, warmup=0, modes=("hot",))
    impl = cases.Impl("x", lambda: cases.TimedSet(run=lambda: 0.5, launch=lambda: None))
    res = harness.measure(ctx, impl, 10**6, 1e6, 2**30)
    smp = res.samples["hot"]
    assert smp.method == "events" and smp.us == [500.0, 500.0] and smp.note.startswith("fallback: span timing")
    clock = [0]
    impl = cases.Impl("y", lambda: cases.TimedSet(run=lambda: 1.0, launch=_clock_launch(clock, 3000)))
    res = harness.measure(FakeCtx(timing="span", iters=2, warmup=0, launches=5), impl, 10**6, 3e6, 2**30)
    assert res.sets == 13 and res.samples["cold"].launches == 13 and res.samples["hot"].launches == 5
    assert res.samples["cold"].us == res.samples["hot"].us == [3.0, 3.0]


def test_host_us_per_call_syncs_once_at_the_end():
    calls, syncs = [], []
    hc = timing.HostCall(lambda: calls.append(len(syncs)), lambda: syncs.append(len(calls)), "f()")
    us = timing.host_us_per_call(hc, calls=20, warmup=3)
    assert us > 0 and len(calls) == 23
    assert syncs == [3, 23]  # once after the warm-up, once after the timed calls
    ctx = FakeCtx(iters=1, warmup=0, modes=("hot",), host_calls=7)
    n = []
    impl = cases.Impl("x", lambda: cases.TimedSet(run=lambda: 0.5),
                      host=lambda: timing.HostCall(lambda: n.append(1), lambda: None, "x()"))  # fmt: skip
    res = harness.measure(ctx, impl, 10**6, 1e6, 2**30)
    assert res.host_us > 0 and res.host_call == "x()" and len(n) == 7 + timing.HOST_WARMUP

    def broken():
        raise RuntimeError("no device arrays")

    res = harness.measure(ctx, cases.Impl("x", lambda: cases.TimedSet(run=lambda: 0.5), host=broken),
                          10**6, 1e6, 2**30)  # fmt: skip
    assert res.host_us is None and "no device arrays" in res.host_note  # the host column fails alone


def test_method_per_backend():
    assert timing.choose_method("auto", "cuda", True) == ("graph", "")
    method, why = timing.choose_method("auto", "cuda", False)
    assert method == "events" and "torch" in why
    assert timing.choose_method("auto", "opencl", False) == ("span", "")
    assert timing.choose_method("auto", "sycl", False) == ("span", "")
    assert timing.choose_method("events", "opencl", False)[0] == "events"
    with pytest.raises(QKGenValueError, match="--timing graph"):
        timing.choose_method("graph", "opencl", False)
    assert timing.choose_method("span", "cuda", True) == ("span", "")  # events on torch's stream
    with pytest.raises(QKGenValueError, match="--timing span: on CUDA it needs torch"):
        timing.choose_method("span", "cuda", False)


def _args(**kw) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    import qkgen.tools.bench as bench

    bench.add_arguments(p)
    return argparse.Namespace(**{**vars(p.parse_args([])), **kw})


@pytest.mark.parametrize("kw, msg", [
    ({"launches": 0}, "--launches: 0"), ({"host_calls": -1}, "--host-calls: -1"),
    ({"op": "gemv", "m": "0"}, "--m: 0"), ({"op": "gemv", "m": "1,1"}, "--m: 1,1"),
    ({"op": "gemv", "m": "a"}, "--m: a"), ({"op": "gemv", "m": ""}, "--m: ''"),
])  # fmt: skip
def test_options_are_checked(kw, msg):
    with pytest.raises(QKGenValueError, match=msg):
        options.validate(_args(**kw))


def test_modes_and_m_list():
    a = _args(op="gemv", m="1,2,4,8")
    options.validate(a)
    assert a.ms == [1, 2, 4, 8] and a.modes == ("cold", "hot")
    for flags, want in (({"hot": True}, ("hot",)), ({"cold": True}, ("cold",)), ({"hot": True, "cold": True},
                                                                                ("cold", "hot"))):  # fmt: skip
        a = _args(**flags)
        options.validate(a)
        assert a.modes == want
    a = _args(op="gemv", m="1,8", hot=True, launches=50)
    options.validate(a)
    a.backend_used, a.shapes_text, a.formats_text, a.dtypes_text = "opencl", "1x1", "q4_0", "f16"
    argv = report.effective_argv(a)
    assert argv[argv.index("--m") + 1] == "1,8" and "--hot" in argv and "--cold" not in argv
    assert argv[argv.index("--launches") + 1] == "50" and "--timing" not in argv


def test_opencl_span_and_host_column_on_the_cpu():
    info = _intel_cpu()
    if info is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    from qkgen.backends import open_device

    dev = open_device("opencl", info.platform)
    args = argparse.Namespace(seed=0, iters=3, warmup=1, max_mem_gb=1.0, device=info.platform, launches=6,
                              host_calls=4)  # fmt: skip
    ctx = cases.Context(dev, args)
    assert ctx.timing == "span" and ctx.like is None
    spec = cases.Spec("dequantize", options.parse_formats("q8_0")[0], "f16", (64, 128))
    case = cases.CASES["dequantize"].prepare(ctx, spec)
    qk = case.impls[0]
    sets = [qk.make_set() for _ in range(3)]
    evs = sets[0].launch()
    assert len(evs) == 1 and all(t > 0 for t in timing.event_ns(evs[0]))
    seq = [sets[i % 3].launch for i in range(timing.sequence_length(3, 6))]
    us = timing.span_samples(seq, reps=3, warmup=1, sync=ctx.sync)
    assert len(us) == 3 and all(u > 0 for u in us)
    single = timing.event_samples([s.run for s in sets], reps=3, warmup=0)
    assert all(u > 0 for u in single)
    # the host column's public call on pyopencl arrays gives what the reference codec gives
    hc = qk.host()
    out = hc.call()
    hc.sync()
    want = qkgen_impl.to_f32(qkgen_impl.round_to(qkgen_impl.dequantize_host(ctx.host_qtensor(spec)), "f16"), "f16")
    assert np.array_equal(np.asarray(out.get(), dtype=np.float32).reshape(want.shape), want)
    assert timing.host_us_per_call(hc, 4) > 0
    # and a whole case through the harness: hot and cold by spans, the host column, the check
    (row,) = harness.run_case(ctx, case, 10.0, 2e5)
    assert row.status == "ok" and row.timing == "span" and row.check == "pass" and row.rel_err == 0
    assert row.us_hot > 0 and row.us_cold > 0 and row.host_us_per_call > 0 and row.host_calls == 4
    assert row.pct_copy == row.pct_copy_cold and row.primary == "cold"


def test_report_keys_and_table():
    row = dict(op="gemv", format="q4_0", variant="-", dtype="f16", shape="4096x14336", m=1, path="float",
               kernel="k", status="ok", error="", bytes=29_000_000, sets=9, primary="cold", timing="graph",
               timing_note="", rel_err=1e-3, check="pass", bit_equal_to_qkgen=None, max_abs_diff_vs_qkgen=None,
               host_us_per_call=12.0, host_note="")  # fmt: skip
    rows = [dict(row, impl="qkgen", us_hot=18.0, us_cold=20.0, pct_copy=60.0),
            dict(row, impl="bnb", us_hot=30.0, us_cold=40.0, pct_copy=30.0, timing="events",
                 timing_note="fallback: graph timing failed (RuntimeError: x)"),
            dict(row, impl="llama.cpp", dtype="f32", us_hot=27.0, us_cold=None, pct_copy=70.0, primary="hot",
                 timing="test-backend-ops", rel_err=None, check="", host_us_per_call=None, sets=0),
            dict(row, impl="qkgen", dtype="bf16", us_hot=None, us_cold=None, pct_copy=None, status="error",
                 error="boom", rel_err=None, host_us_per_call=None, host_note="why")]  # fmt: skip
    rep = {"rows": rows, "settings": {"timing": "graph"}, "device": {"name": "GPU"}, "backend": "cuda",
           "date_utc": "2026-11-23T00:00:00+00:00", "command": "qkgen bench --op gemv"}  # fmt: skip
    errors = []
    lines = report.table(rep, errors)
    assert lines[0] == "GPU (cuda), 2026-11-23T00:00:00+00:00: `qkgen bench --op gemv`"
    head = "| format | variant | dtype | shape | M | impl | kernel | MB moved | sets | device µs (hot) | " \
           "device µs (cold) | % copy | host µs/call | check | vs qkgen |"
    assert lines[2] == head
    body = [x for x in lines if x.startswith("| q4_0")]
    assert body[0].endswith("| 18.0 | 20.0 | 60.0 | 12.0 | pass (0.001) | - |")
    assert body[1].endswith("| 30.0† | 40.0† | 30.0 | 12.0 | pass (0.001) | 2.00x |")  # cold over cold
    assert body[2].endswith("| 27.0 | - | 70.0 (hot) | - | - | 1.50x (qkgen f16) |")  # hot over fastest hot
    assert body[3].endswith("| error | error | - | n/a | - | - |")
    assert errors == ["qkgen q4_0 - bf16 4096x14336 M=1: boom"]
    assert any(x.startswith("- † bnb q4_0 - f16 4096x14336 M=1: per-launch events (fallback: graph") for x in lines)
    assert "- host µs/call n/a (1 row): why" in lines
