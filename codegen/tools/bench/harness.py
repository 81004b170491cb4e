"""The timing harness: rotation over sets that exceed the L2, hot and cold timings, the host
column, one Row per implementation; and the device facts it needs (copy ceiling, L2 size), which
the device measures.

Measurement rules (every number in the output comes from a run made by `qkgen bench`):

  * Device time: every implementation of a run is timed by one method (``timing``): CUDA-graph
    replay on CUDA with torch, events around back-to-back launches on OpenCL/SYCL, per-launch
    events only as a labelled fallback. A sample is µs per launch; a row reports the median of
    ``--iters`` samples, after every set ran once (first touch, and the output the check reads)
    and ``--warmup`` untimed samples.
  * "cold": the launches rotate over enough distinct input/output sets that the L2 cannot hold
    them: ceil(4 * L2 / bytes_per_set) + 1 sets, at least 2 (``rotation_sets``), L2 = the larger
    of ``--l2-mb`` (default 50 MB, the H100/H200 figure) and what the device reports, and at most
    ``--max-mem-gb`` of sets (the row says when that cap bound). "hot": the launches reuse one set.
  * Host µs per call: ``--host-calls`` back-to-back public calls on device arrays, synchronized
    once at the end (``timing.host_us_per_call``).
  * Bandwidth counts the bytes the op must move (``byte_counts``); the formula is printed per row.
  * The copy ceiling is a device-to-device copy measured in the same run on the same device
    (bytes read + bytes written, ``Device.copy_ceiling``); "% copy" is a row's GB/s over it.
"""

from __future__ import annotations

import gc
import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from qkgen.errors import QKGenError, QKGenValueError

from .cases import Case, Context, Impl, TimedSet
from .timing import (EVENTS, GRAPH, SPAN, Samples, event_samples, graph_samples, host_us_per_call,
                     sequence_length, span_samples, stream_span_samples)  # fmt: skip

L2_DEFAULT_MB = 50.0  # H100 / H200 L2 (the H200 reports 60 MB; the device's own figure wins if larger)
L2_FACTOR = 4  # the sets together must exceed this many L2s
CHECK_REL_TOL = 1e-2  # rows with a check: relative error vs the reference, else the row is an error


def rotation_sets(bytes_per_set: int, l2_bytes: float = L2_DEFAULT_MB * 1e6, max_bytes: float | None = None,
                  factor: int = L2_FACTOR) -> int:  # fmt: skip
    """Input/output sets to rotate over: ceil(factor * L2 / bytes_per_set) + 1, at least 2, and
    no more than fit in max_bytes (but never fewer than 2). Together they exceed factor * L2
    unless max_bytes forbids it (see ``covers_l2``)."""
    if bytes_per_set <= 0:
        raise QKGenValueError(f"bytes_per_set: {bytes_per_set}; allowed: a positive byte count")
    n = max(2, math.ceil(factor * l2_bytes / bytes_per_set) + 1)
    if max_bytes is not None:
        n = min(n, max(2, int(max_bytes // bytes_per_set)))
    return n


def covers_l2(sets: int, bytes_per_set: int, l2_bytes: float, factor: int = L2_FACTOR) -> bool:
    return sets * bytes_per_set > factor * l2_bytes


@dataclass
class Row:
    op: str
    format: str
    variant: str
    dtype: str
    shape: str
    impl: str
    kernel: str = ""
    path: str = ""  # gemv qkgen rows: float | int8dot | int8mma | mma
    default: bool = False  # the qkgen row the public call takes when not told which
    m: int | None = None  # gemv: rows of x
    status: str = "ok"  # ok | error
    error: str = ""
    timing: str = ""  # timing.GRAPH | SPAN | EVENTS | "test-backend-ops" (llama.cpp rows)
    timing_note: str = ""  # why a fallback was taken
    primary: str = ""  # the mode us_median / gbps / pct_copy report: "cold" when measured, else "hot"
    us_median: float | None = None  # of the primary mode
    us_min: float | None = None
    us_max: float | None = None
    gbps: float | None = None
    pct_copy: float | None = None
    us_hot: float | None = None
    us_cold: float | None = None
    gbps_hot: float | None = None
    gbps_cold: float | None = None
    pct_copy_hot: float | None = None
    pct_copy_cold: float | None = None
    launches_hot: int = 0  # launches per sample
    launches_cold: int = 0
    host_us_per_call: float | None = None
    host_calls: int = 0
    host_call: str = ""  # the public call the host column times
    host_note: str = ""  # why there is no host figure
    bytes: int = 0
    byte_formula: str = ""
    sets: int = 0
    set_bytes: int = 0
    covers_l2: bool = False
    iters: int = 0
    warmup: int = 0
    max_abs_diff_vs_qkgen: float | None = None
    bit_equal_to_qkgen: bool | None = None
    rel_err: float | None = None  # ||y - reference|| / ||reference|| (gemv: float64 product, sampled rows)
    check: str = ""  # "pass" | "FAIL" where the impl has a correctness check
    note: str = ""
    samples_us: list[float] = field(default_factory=list)  # of the primary mode
    samples_hot_us: list[float] = field(default_factory=list)
    samples_cold_us: list[float] = field(default_factory=list)


@dataclass
class Measured:
    samples: dict[str, Samples]  # mode -> samples
    sets: int
    output: np.ndarray | None  # set 0's output after its first run (host f32), for the checks
    host_us: float | None = None
    host_call: str = ""
    host_note: str = ""


def _time_mode(ctx: Context, method: str, sets: list[TimedSet], mode: str) -> Samples:
    """Samples of one mode by the run's method; per-launch events (labelled, with the reason) where
    the method cannot time this implementation."""
    a = ctx.args
    note = ctx.timing_note
    if method in (GRAPH, SPAN):
        if all(s.launch is not None for s in sets):
            n = sequence_length(len(sets), a.launches)
            seq = [sets[i % len(sets)].launch for i in range(n)]
            try:
                if method == GRAPH:
                    us = graph_samples(ctx.torch, seq, a.iters, a.warmup)
                elif ctx.torch_cuda:  # CUDA: events on torch's stream around the launches
                    us = stream_span_samples(ctx.torch, seq, a.iters, a.warmup)
                else:
                    us = span_samples(seq, a.iters, a.warmup, ctx.sync)
                return Samples(mode, method, us, n)
            except Exception as e:  # capture refused, no events: this impl falls back, labelled
                why = str(e).splitlines()[0] if str(e) else ""
                note = f"fallback: {method} timing failed ({type(e).__name__}: {why})"
                ctx.sync()
        else:
            note = f"fallback: no bare launch for {method} timing"
    return Samples(mode, EVENTS, event_samples([s.run for s in sets], a.iters, a.warmup), 1, note)


def measure(ctx: Context, impl: Impl, bytes_per_set: int, l2_bytes: float, max_bytes: float) -> Measured:
    """Hot and/or cold samples of impl (``ctx.args.modes``), set 0's output, and the host column.
    Cold rotates over rotation_sets(...) fresh sets, hot reuses set 0; every set runs once first
    (first touch, lazy allocation), then ctx.sync()."""
    a = ctx.args
    nsets = rotation_sets(bytes_per_set, l2_bytes, max_bytes) if "cold" in a.modes else 1
    sets = [impl.make_set() for _ in range(nsets)]
    for s in sets:
        s.launch() if s.launch is not None else s.run()
    ctx.sync()
    out = np.asarray(sets[0].output()).reshape(-1) if sets[0].output is not None else None
    samples = {m: _time_mode(ctx, ctx.timing, sets if m == "cold" else sets[:1], m) for m in a.modes}
    del sets
    res = Measured(samples, nsets, out)
    if impl.host is not None and a.host_calls > 0:
        try:
            hc = impl.host()
            res.host_call = hc.text
            res.host_us = host_us_per_call(hc, a.host_calls)
        except Exception as e:  # the host column fails alone
            res.host_note = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        finally:
            ctx.sync()
    elif impl.host_note:
        res.host_note = impl.host_note
    return res


def _bandwidth(nbytes: int, us: float, ceiling_gbps: float | None) -> tuple[float, float | None]:
    gbps = nbytes / (us * 1e-6) / 1e9
    return gbps, (100.0 * gbps / ceiling_gbps if ceiling_gbps else None)


def fill_times(row: Row, mode: str, us_samples: list[float], ceiling_gbps: float | None) -> None:
    """Set the row's figures of one mode (and the primary ones: cold wins over hot)."""
    med = statistics.median(us_samples)
    gbps, pct = _bandwidth(row.bytes, med, ceiling_gbps)
    setattr(row, f"us_{mode}", med)
    setattr(row, f"gbps_{mode}", gbps)
    setattr(row, f"pct_copy_{mode}", pct)
    setattr(row, f"samples_{mode}_us", [round(s, 3) for s in us_samples])
    if mode == "cold" or row.primary != "cold":
        row.primary = mode
        row.us_median, row.us_min, row.us_max = med, min(us_samples), max(us_samples)
        row.gbps, row.pct_copy = gbps, pct
        row.samples_us = [round(s, 3) for s in us_samples]


def _clear_times(row: Row) -> None:
    for f in ("us_median", "us_min", "us_max", "gbps", "pct_copy", "us_hot", "us_cold", "gbps_hot",
              "gbps_cold", "pct_copy_hot", "pct_copy_cold"):  # fmt: skip
        setattr(row, f, None)
    row.samples_us, row.samples_hot_us, row.samples_cold_us = [], [], []


def _compare(row: Row, impl: Impl, got: np.ndarray | None, case: Case,
             ref_out: np.ndarray | None) -> np.ndarray | None:  # fmt: skip
    """Fill the row's comparison with qkgen's output and its check; returns qkgen's output."""
    if got is not None and len(case.impls) > 1:
        if impl.impl == "qkgen":
            ref_out = got
        elif ref_out is not None and got.shape == ref_out.shape:
            diff = np.abs(got.astype(np.float64) - ref_out)
            row.max_abs_diff_vs_qkgen = float(np.nanmax(diff)) if diff.size else 0.0
            row.bit_equal_to_qkgen = bool(np.array_equal(got, ref_out, equal_nan=True))
    if impl.check is not None and got is not None:
        row.rel_err = float(impl.check(got))
        row.check = "pass" if row.rel_err < CHECK_REL_TOL else "FAIL"
        if row.check != "pass":  # a wrong result posts no number
            row.status = "error"
            row.error = (f"correctness check failed: relative error {row.rel_err:.3g} vs the "
                         f"reference (allowed < {CHECK_REL_TOL:g})")  # fmt: skip
            _clear_times(row)
    return ref_out


def _fixed_row(ctx: Context, row: Row, impl: Impl, ceiling_gbps: float | None) -> bool:
    """A row measured elsewhere (llama.cpp's test-backend-ops): impl.fixed() gives its figures, or
    {"missing": why} (then there is no row, and the report notes why)."""
    res = impl.fixed()
    if "missing" in res:
        ctx.note_once(res["missing"])
        return False
    row.timing, row.iters, row.warmup = res.get("timing", ""), 0, 0
    row.kernel = res.get("kernel", row.kernel)
    row.note = "; ".join(filter(None, [row.note, res.get("note", "")]))
    for mode in ("hot", "cold"):
        if res.get(f"us_{mode}") is not None:
            fill_times(row, mode, [res[f"us_{mode}"]], ceiling_gbps)
            setattr(row, f"launches_{mode}", res.get("runs", 0))
    return True


def run_case(ctx: Context, case: Case, ceiling_gbps: float | None, l2_bytes: float) -> list[Row]:
    a, spec = ctx.args, case.spec
    rows: list[Row] = []
    ref_out = None
    for impl in case.impls:
        nbytes = impl.bytes or case.bytes
        row = Row(op=spec.op, format=spec.sel.name, variant=spec.sel.label, dtype=impl.dtype or spec.dtype,
                  shape=spec.shape_str, impl=impl.impl, kernel=impl.kernel, path=impl.path, m=spec.m,
                  default=impl.default, bytes=nbytes, byte_formula=impl.formula or case.formula, set_bytes=nbytes,
                  iters=a.iters, warmup=a.warmup, note=impl.note)  # fmt: skip
        try:
            if impl.fixed is not None:
                if _fixed_row(ctx, row, impl, ceiling_gbps):
                    rows.append(row)
                continue
            res = measure(ctx, impl, nbytes, l2_bytes, a.max_mem_gb * 2**30)
            for mode, smp in res.samples.items():
                fill_times(row, mode, smp.us, ceiling_gbps)
                setattr(row, f"launches_{mode}", smp.launches)
                row.timing, row.timing_note = smp.method, smp.note
            row.host_us_per_call, row.host_call, row.host_note = res.host_us, res.host_call, res.host_note
            row.host_calls = a.host_calls if res.host_us is not None else 0
            row.sets = res.sets
            row.covers_l2 = covers_l2(res.sets, nbytes, l2_bytes) if "cold" in a.modes else False
            if "cold" in a.modes and not row.covers_l2:
                row.note = "; ".join(filter(None, [row.note, f"--max-mem-gb caps rotation at {res.sets} sets "
                                                   f"(< {L2_FACTOR}x L2)"]))  # fmt: skip
            ref_out = _compare(row, impl, res.output, case, ref_out)
        except QKGenError as e:
            row.status, row.error = "error", str(e).splitlines()[0]
        except Exception as e:  # an out-of-memory or a runtime error fails this row, not the run
            row.status, row.error = "error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        rows.append(row)
        gc.collect()
        if ctx.torch is not None and ctx.torch.cuda.is_available():
            ctx.torch.cuda.empty_cache()
    return rows


# ---- device facts: the device measures them (Device.copy_ceiling, Device.l2_bytes) ----


def copy_ceiling(dev, copy_mb: float, iters: int, warmup: int) -> dict:
    """The device-to-device copy bandwidth of this device, measured now: {"gbps", "method",
    "buffer_bytes", "all"} or {"gbps": None, "note": why}. Bytes read plus bytes written."""
    try:
        res = dev.copy_ceiling(int(copy_mb * 2**20), iters=iters, warmup=warmup)
    except (AttributeError, NotImplementedError) as e:
        return {"gbps": None, "note": f"no copy ceiling: the {dev.backend} device does not measure one ({e})"}
    except Exception as e:
        return {"gbps": None, "note": f"copy ceiling failed: {type(e).__name__}: {e}"}
    if not res or not res.get("gbps"):
        return {"gbps": None, "note": f"no copy ceiling: the {dev.backend} device reported none"}
    return dict(res)


def device_l2_bytes(dev) -> int | None:
    """The L2 size the device reports, or None where it reports none (or cannot be asked)."""
    try:
        n = dev.l2_bytes()
    except Exception:
        return None
    return int(n) if n else None
