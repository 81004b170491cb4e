"""How device and host time are taken. Every implementation of a run is timed by the same method:

  graph   (CUDA with torch)  N back-to-back launches captured into one torch.cuda.CUDAGraph; one
          sample = one replay between two CUDA events / N. qkgen's launches go through libcuda on
          torch's current stream (its sets hold torch tensors), so they are captured like torch's.
  span    (OpenCL, SYCL)     N back-to-back launches on the in-order queue; one sample = (end of the
          last launch - start of the first, from the launches' profiling events) / N.
          (CUDA with torch)  N back-to-back launches on torch's current stream between two CUDA
          events / N: how OpenCL is timed, so that the two backends can be set side by side under
          one timer (it counts the host's launch cost wherever that exceeds the kernel's time).
  events  (fallback)         one launch between two device events per sample (``TimedSet.run``);
          this is how bench timed before; it counts host gaps inside multi-launch calls (bnb's
          nested dequantize) and is only used where the others cannot run, and labelled so.

"cold": the N launches cycle through every rotated set (together > 4x L2), N a multiple of the
set count; "hot": the N launches reuse set 0 (how llama.cpp's test-backend-ops times).

Host time (``host_us_per_call``): the wall time of many back-to-back public calls (qkgen.gemv /
qkgen.dequantize on device arrays, bitsandbytes' functions, torch.matmul) / their count, after a
warm-up, synchronizing once at the end.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from qkgen.errors import QKGenError

GRAPH, SPAN, EVENTS = "graph", "span", "events"
LABELS = {
    GRAPH: "CUDA-graph replay: N launches captured in one torch.cuda.CUDAGraph, CUDA events around a "
    "replay, / N",
    SPAN: "events around N back-to-back launches: first launch's start to last launch's end, / N",
    EVENTS: "per-launch device events (fallback)",
}
HOST_WARMUP = 5  # untimed public calls before the host timing


@dataclass
class Samples:
    mode: str  # "hot" | "cold"
    method: str  # GRAPH | SPAN | EVENTS
    us: list[float]  # one per sample: µs per launch
    launches: int  # launches per sample (1 for EVENTS)
    note: str = ""  # why a fallback was taken


def sequence_length(nsets: int, launches: int) -> int:
    """Launches per sample: at least `launches`, and a whole number of passes over `nsets` sets."""
    nsets = max(1, nsets)
    return nsets * max(1, math.ceil(max(1, launches) / nsets))


def _check(us: float, what: str) -> float:
    if not (us > 0 and math.isfinite(us)):
        raise QKGenError(f"{what}: device timer returned {us!r} µs")
    return us


# ---- CUDA events (torch): graph replays and spans ----


def _cuda_event_samples(torch, run: Callable[[], Any], reps: int, count: int, what: str) -> list[float]:
    """µs per launch of `reps` run()s, each between two CUDA events on torch's current stream and
    holding `count` launches (a graph replay or a span of back-to-back launches)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(max(1, reps)):
        start.record()
        run()
        end.record()
        end.synchronize()
        out.append(_check(start.elapsed_time(end) * 1e3 / count, what))
    return out


def graph_samples(torch, seq: Sequence[Callable[[], Any]], reps: int, warmup: int) -> list[float]:
    """µs per launch of the launches `seq`, captured in order into one CUDA graph: `reps` replays
    (after `warmup` untimed ones), each timed by CUDA events on the replaying stream."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # libraries set up per-stream state (workspaces) before capture
        for f in seq[: min(len(seq), 3)]:
            f()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, capture_error_mode="thread_local"):
            for f in seq:
                f()
    except TypeError:  # a torch without capture_error_mode
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for f in seq:
                f()
    try:
        for _ in range(max(1, warmup)):
            g.replay()
        return _cuda_event_samples(torch, g.replay, reps, len(seq), "CUDA graph replay")
    finally:
        torch.cuda.synchronize()
        del g


def stream_span_samples(torch, seq: Sequence[Callable[[], Any]], reps: int, warmup: int) -> list[float]:
    """CUDA's span: µs per launch of the launches `seq` enqueued back to back on torch's current
    stream, between two CUDA events recorded on it, `reps` times after `warmup` untimed passes."""
    for _ in range(max(0, warmup)):
        for f in seq:
            f()
    torch.cuda.synchronize()

    def launch_all() -> None:
        for f in seq:
            f()

    return _cuda_event_samples(torch, launch_all, reps, len(seq), "CUDA event span")


# ---- OpenCL / SYCL events ----


def event_ns(ev) -> tuple[int, int]:
    """(start, end) device timestamps in ns of a launch's event: a pyopencl Event (profiling queue)
    or qkgen's SYCL event. Waits for it."""
    if hasattr(ev, "profile_ns"):  # backends/sycl_native.Event
        s, e = ev.profile_ns()
        return int(s), int(e)
    prof = getattr(ev, "profile", None)
    if prof is None:
        raise QKGenError(f"{type(ev).__name__}: not a profiling event; the span timer needs one per launch")
    ev.wait()
    return int(prof.start), int(prof.end)


def _events_of(ret) -> list:
    if ret is None:
        return []
    return [e for e in (ret if isinstance(ret, (list, tuple)) else [ret]) if e is not None]


def span_samples(seq: Sequence[Callable[[], Any]], reps: int, warmup: int,
                 sync: Callable[[], None]) -> list[float]:  # fmt: skip
    """µs per launch of the launches `seq` enqueued back to back on an in-order queue: (end of the
    last launch's last event - start of the first launch's first event) / len(seq), `reps` times
    after `warmup` untimed passes. Each launch returns its event(s)."""
    for _ in range(max(0, warmup)):
        for f in seq:
            f()
    sync()
    out = []
    for _ in range(max(1, reps)):
        first = last = None
        for f in seq:
            evs = _events_of(f())
            if not evs:
                raise QKGenError("a launch returned no event: the span timer needs OpenCL or SYCL events")
            first = evs[0] if first is None else first
            last = evs[-1]
        start, end = event_ns(first)[0], event_ns(last)[1]
        sync()
        out.append(_check((end - start) * 1e-3 / len(seq), "event span"))
    return out


# ---- per-launch events (fallback) ----


def event_samples(runs: Sequence[Callable[[], float]], reps: int, warmup: int) -> list[float]:
    """µs of single launches between two device events, rotating over `runs` (run() -> ms)."""
    n = len(runs)
    for i in range(max(0, warmup)):
        runs[i % n]()
    return [_check(runs[(warmup + i) % n]() * 1e3, "per-launch events") for i in range(max(1, reps))]


# ---- host time ----


@dataclass
class HostCall:
    """One public call, repeatable: call() enqueues it (device arrays in and out), sync() waits."""

    call: Callable[[], Any]
    sync: Callable[[], None]
    text: str  # what is called, for the report
    keep: Any = None


def host_us_per_call(hc: HostCall, calls: int, warmup: int = HOST_WARMUP) -> float:
    """Wall µs per call of `calls` back-to-back hc.call()s, synchronizing once at the end (after
    `warmup` untimed calls and a synchronize)."""
    for _ in range(max(0, warmup)):
        hc.call()
    hc.sync()
    t0 = time.perf_counter()
    for _ in range(calls):
        hc.call()
    hc.sync()
    return (time.perf_counter() - t0) * 1e6 / calls


def default_method(backend: str, torch_cuda: bool) -> tuple[str, str]:
    """(method, why) for a run on `backend`: graphs on CUDA with torch, spans on OpenCL/SYCL."""
    if backend == "cuda":
        if torch_cuda:
            return GRAPH, ""
        return EVENTS, "no torch with CUDA: CUDA graphs are captured through torch.cuda.CUDAGraph"
    return SPAN, ""


def choose_method(requested: str, backend: str, torch_cuda: bool) -> tuple[str, str]:
    """(method, note) for --timing `requested` (auto | graph | span | events) on `backend`."""
    from qkgen.errors import QKGenValueError

    if requested in (None, "auto"):
        return default_method(backend, torch_cuda)
    if requested == GRAPH and not (backend == "cuda" and torch_cuda):
        raise QKGenValueError("--timing graph: needs the CUDA backend with torch (torch.cuda.CUDAGraph)")
    if requested == SPAN and backend == "cuda" and not torch_cuda:
        raise QKGenValueError("--timing span: on CUDA it needs torch (CUDA events on torch's stream); "
                              "allowed without torch: auto, events")  # fmt: skip
    if requested not in (GRAPH, SPAN, EVENTS):
        raise QKGenValueError(f"--timing: {requested!r}; allowed: auto, graph, span, events")
    return requested, ("per-launch events, asked for with --timing events" if requested == EVENTS else "")
