"""The timing harness: rotation over sets that exceed the L2, warm-up, the median, one Row per
implementation; and the device facts it needs (copy ceiling, L2 size), which the device measures.

Measurement rules (every number in the output comes from a run made by `qkgen bench`):

  * Each launch is timed with device events (``Device.time_ms``; torch CUDA events for the
    bitsandbytes rows); the reported time is the median of ``--iters`` timed launches, after
    every input set has run once (first touch) and ``--warmup`` further launches.
  * Launches rotate over enough distinct input/output sets that the L2 cache cannot hold them:
    ceil(4 * L2 / bytes_per_set) + 1 sets, at least 2 (``rotation_sets``), L2 = the larger of
    ``--l2-mb`` (default 50 MB, the H100/H200 figure) and what the device reports, and at most
    ``--max-mem-gb`` of sets (the row says when that cap bound).
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
    path: str = ""  # gemv qkgen rows: float | int8dot
    m: int | None = None  # gemv: rows of x
    status: str = "ok"  # ok | error
    error: str = ""
    us_median: float | None = None
    us_min: float | None = None
    us_max: float | None = None
    gbps: float | None = None
    pct_copy: float | None = None
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
    samples_us: list[float] = field(default_factory=list)


def measure(impl: Impl, bytes_per_set: int, iters: int, warmup: int, l2_bytes: float,
            max_bytes: float) -> tuple[list[float], int, TimedSet]:  # fmt: skip
    """Device times (µs) of `iters` launches rotating over fresh sets; returns (samples, sets, first set).
    Every set runs once untimed first (first touch, lazy allocation), then `warmup` launches."""
    nsets = rotation_sets(bytes_per_set, l2_bytes, max_bytes)
    sets = [impl.make_set() for _ in range(nsets)]
    for s in sets:
        s.run()
    for i in range(warmup):
        sets[i % nsets].run()
    samples = []
    for i in range(iters):
        ms = sets[(warmup + i) % nsets].run()
        if not (ms > 0 and math.isfinite(ms)):
            raise QKGenError(f"{impl.impl}: device timer returned {ms!r} ms")
        samples.append(ms * 1e3)
    first = sets[0]
    del sets[1:]
    return samples, nsets, first


def _bandwidth(nbytes: int, us: float, ceiling_gbps: float | None) -> tuple[float, float | None]:
    gbps = nbytes / (us * 1e-6) / 1e9
    return gbps, (100.0 * gbps / ceiling_gbps if ceiling_gbps else None)


def _compare(row: Row, impl: Impl, first: TimedSet, case: Case,
             ref_out: np.ndarray | None) -> np.ndarray | None:  # fmt: skip
    """Fill the row's comparison with qkgen's output and its check; returns qkgen's output."""
    if first.output is not None and len(case.impls) > 1:
        got = first.output().reshape(-1)
        if impl.impl == "qkgen":
            ref_out = got
        elif ref_out is not None:
            diff = np.abs(got.astype(np.float64) - ref_out)
            row.max_abs_diff_vs_qkgen = float(np.nanmax(diff)) if diff.size else 0.0
            row.bit_equal_to_qkgen = bool(np.array_equal(got, ref_out, equal_nan=True))
    if impl.check is not None and first.output is not None:
        row.rel_err = float(impl.check(first.output().reshape(-1)))
        row.check = "pass" if row.rel_err < CHECK_REL_TOL else "FAIL"
        if row.check != "pass":  # a wrong result posts no number
            row.status = "error"
            row.error = (f"correctness check failed: relative error {row.rel_err:.3g} vs the "
                         f"reference (allowed < {CHECK_REL_TOL:g})")  # fmt: skip
            row.us_median = row.us_min = row.us_max = row.gbps = row.pct_copy = None
            row.samples_us = []
    return ref_out


def run_case(ctx: Context, case: Case, ceiling_gbps: float | None, l2_bytes: float) -> list[Row]:
    a, spec = ctx.args, case.spec
    rows: list[Row] = []
    ref_out = None
    for impl in case.impls:
        nbytes = impl.bytes or case.bytes
        row = Row(op=spec.op, format=spec.sel.name, variant=spec.sel.label, dtype=spec.dtype,
                  shape=spec.shape_str, impl=impl.impl, kernel=impl.kernel, path=impl.path, m=spec.m,
                  bytes=nbytes, byte_formula=impl.formula or case.formula, set_bytes=nbytes, iters=a.iters,
                  warmup=a.warmup, note=impl.note)  # fmt: skip
        try:
            cap = a.max_mem_gb * 2**30
            samples, nsets, first = measure(impl, nbytes, a.iters, a.warmup, l2_bytes, cap)
            med = statistics.median(samples)
            row.us_median, row.us_min, row.us_max = med, min(samples), max(samples)
            row.gbps, row.pct_copy = _bandwidth(nbytes, med, ceiling_gbps)
            row.sets, row.covers_l2 = nsets, covers_l2(nsets, nbytes, l2_bytes)
            row.samples_us = [round(s, 3) for s in samples]
            if not row.covers_l2:
                row.note = "; ".join(filter(None, [row.note, f"--max-mem-gb caps rotation at {nsets} sets "
                                                   f"(< {L2_FACTOR}x L2)"]))  # fmt: skip
            ref_out = _compare(row, impl, first, case, ref_out)
            del first
        except QKGenError as e:
            row.status, row.error = "error", str(e).splitlines()[0]
        except Exception as e:  # an out-of-memory or a runtime error fails this row, not the run
            row.status, row.error = "error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        rows.append(row)
        gc.collect()
        if ctx.torch is not None:
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
