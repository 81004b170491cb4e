"""Launches from many threads at once (issue 10 item 2): every CPU device, 8 threads each calling
dequantize and gemv with its own data under a tiny switch interval, every result checked.

A pyopencl Kernel object holds its arguments between set-args and the enqueue; unguarded, threads
sharing one kernel swapped each other's arguments (wrong results, INVALID_KERNEL_ARGS, pocl
segfaults). To make that window wide on every run, OpenCL enqueues sleep 0.2 ms first here (the GIL
is released, other threads run their set-args); test_unguarded_opencl_launches_mix shows that this
reproduces the defect once the device's queue lock is taken away.
"""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import qkgen
from qkgen.backends import get, open_device
from qkgen.errors import BuildError
from qkgen.formats import reference

THREADS, CALLS = 8, 40
K, N = 512, 24


def _usable(backend: str, index: int) -> bool:
    """Whether the device builds kernels here (pocl's LLVM fails on some hosts for any kernel)."""
    qt = reference.quantize(np.ones((1, 64), np.float32), "q8_0")
    try:
        qkgen.dequantize(qt, "f32", backend=backend, device=index)
        return True
    except BuildError:
        return False


DEVICES = []
for _name in ("opencl", "sycl", "cuda"):
    if get(_name).is_available():
        marks = [pytest.mark.gpu] if _name == "cuda" else []
        DEVICES += [pytest.param(_name, d.index, id=f"{_name}-{d.index}", marks=marks)
                    for d in get(_name).devices()]  # fmt: skip


@contextlib.contextmanager
def tiny_switch_interval():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run_threads(work) -> list[str]:
    """work(thread_index) in THREADS threads at once; the failures they report."""
    failures: list[str] = []
    start = threading.Barrier(THREADS)

    def body(t: int):
        try:
            start.wait()
            failures.extend(work(t))
        except Exception as e:  # a crash in a thread is a failure, not a silent stop
            failures.append(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=body, args=(t,)) for t in range(THREADS)]
    with tiny_switch_interval():
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    return failures


@pytest.fixture
def slow_opencl_enqueue(monkeypatch):
    """pyopencl's generated kernel invoker sets the arguments, then calls _cl.enqueue_nd_range_kernel:
    a sleep in between hands the kernel object to other threads at the worst moment."""
    if not get("opencl").is_available():
        return
    import pyopencl._cl as _cl

    monkeypatch.setattr(_cl, "enqueue_nd_range_kernel", slowed(_cl.enqueue_nd_range_kernel))


def slowed(enqueue):
    """`enqueue` after a 0.2 ms sleep (the GIL released)."""

    def slow(*args, **kw):
        time.sleep(2e-4)
        return enqueue(*args, **kw)

    return slow


def weights(seed: int):
    rng = np.random.default_rng(seed)
    return reference.quantize(rng.standard_normal((N, K)).astype(np.float32), "q4_0")


@pytest.mark.parametrize("backend, index", DEVICES)
def test_dequantize_and_gemv_from_many_threads(backend, index, slow_opencl_enqueue):
    if not _usable(backend, index):
        pytest.skip(f"{backend} device {index} cannot build kernels on this host")
    qts = [weights(t) for t in range(THREADS)]
    refs = [reference.dequantize(qt) for qt in qts]
    qkgen.gemv(qts[0], np.ones((3, K), np.float32), backend=backend, device=index)  # compile once first

    def work(t: int) -> list[str]:
        rng, bad = np.random.default_rng(100 + t), []
        for i in range(CALLS):
            w = qkgen.dequantize(qts[t], "f32", backend=backend, device=index)
            if not np.array_equal(w, refs[t]):
                bad.append(f"thread {t} call {i}: dequantize differs in {(w != refs[t]).sum()} elements")
            x = rng.standard_normal((3, K)).astype(np.float32)
            y = qkgen.gemv(qts[t], x, backend=backend, device=index)
            want = x.astype(np.float64) @ refs[t].T.astype(np.float64)
            bound = 1e-5 * (np.abs(x) @ np.abs(refs[t]).T) + 1e-6
            if not (np.abs(y - want) <= bound).all():
                bad.append(f"thread {t} call {i}: gemv off by {np.abs(y - want).max()}")
        return bad

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        failures = run_threads(work)
        gc.collect()  # buffers the threads dropped are freed here, on another thread than theirs
    assert not failures, f"{len(failures)} failures, first: {failures[:5]}"
    leaks = [str(w.message) for w in caught if "could not be cleaned up" in str(w.message)]
    assert not leaks, f"device memory leaked: {leaks[:3]}"


# The unguarded run is undefined behaviour in the driver (mixed arguments, a crash, a hang), so it
# runs in a process of its own: whatever the driver does there cannot take the test worker with it.
_UNGUARDED = """
import contextlib
import numpy as np
import pyopencl._cl as _cl
import qkgen
from qkgen.backends import open_device
from qkgen.formats import reference
from tests.test_backend_threads import CALLS, THREADS, run_threads, slowed, weights

_cl.enqueue_nd_range_kernel = slowed(_cl.enqueue_nd_range_kernel)
dev = open_device("opencl", 0)
qts = [weights(t) for t in range(THREADS)]
refs = [reference.dequantize(qt) for qt in qts]
qkgen.dequantize(qts[0], "f32", backend="opencl", device=0)
dev._queue_lock = contextlib.nullcontext()

def work(t):
    return [f"thread {t} call {i}" for i in range(CALLS // 4)
            if not np.array_equal(qkgen.dequantize(qts[t], "f32", backend="opencl", device=0), refs[t])]

print("MIXED", len(run_threads(work)), flush=True)
"""


@pytest.mark.skipif(not get("opencl").is_available(), reason="no OpenCL")
def test_unguarded_opencl_launches_mix():
    """The defect the queue lock prevents, reproduced: without it, threads sharing one kernel
    object launch with each other's arguments (or the driver crashes, which shows it as well)."""
    root = Path(__file__).resolve().parent.parent
    try:
        run = subprocess.run([sys.executable, "-c", _UNGUARDED], cwd=root, capture_output=True, text=True,
                             timeout=300)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail("the unguarded launches did not finish in 300 s")
    if run.returncode < 0:  # killed by a signal: the race broke the driver
        return
    assert run.returncode == 0, run.stderr[-3000:]
    mixed = [line for line in run.stdout.splitlines() if line.startswith("MIXED ")]
    assert mixed, run.stdout[-2000:]
    assert int(mixed[-1].split()[1]) > 0, "every unguarded launch was right: the test no longer reproduces the race"


@pytest.mark.skipif(not get("opencl").is_available(), reason="no OpenCL")
def test_numpy_calls_free_their_own_buffers_and_no_others(monkeypatch):
    """A call on numpy arrays frees what it made (the copies of its inputs, its output) as soon as it
    has read the result, under the queue lock; a call on device arrays frees nothing of the caller's."""
    import pyopencl.array as cla

    dev = open_device("opencl", 0)
    freed: list = []
    discard = dev.discard
    monkeypatch.setattr(dev, "discard", lambda bufs: (freed.append(list(bufs)), discard(bufs))[1])
    qt, x = weights(1), np.random.default_rng(2).standard_normal((3, K)).astype(np.float32)
    want = reference.dequantize(qt)
    assert np.array_equal(qkgen.dequantize(qt, "f32", backend="opencl", device=0), want)
    assert len(freed) == 1 and len(freed[0]) == 2  # the blocks' copy and the output
    assert all(f.__class__.__name__ == "Buffer" for f in freed[0])
    freed.clear()
    y = qkgen.gemv(qt, x, backend="opencl", device=0)
    assert len(freed) == 1 and len(freed[0]) >= 3  # blocks, x and y at least (two launches: q8_1 x too)
    assert np.allclose(y, x @ want.T, rtol=1e-4, atol=1e-3)
    freed.clear()
    data = cla.to_device(dev.queue, np.asarray(qt.data))
    out = qkgen.dequantize(qt.with_arrays(data=data), "f32", backend="opencl", device=0)
    assert not freed, "a device-array call freed buffers"
    assert np.array_equal(out.get(), want) and np.array_equal(data.get(), np.asarray(qt.data))
