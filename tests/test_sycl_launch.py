"""A warm SYCL call launches through a packed argument table (backends/sycl_launch.PackedLaunch):
only the USM addresses that change are written, under a lock, before each enqueue. Threads sharing
one weight (one binding, one table) must each get the result of their own x; a changing argument
that is not USM memory is refused by name."""

import ctypes
import threading

import numpy as np
import pytest

import qkgen
from qkgen.backends import get, open_device, sycl_launch
from qkgen.formats import reference
from qkgen.kernels.render import render

sycl = get("sycl")
WHY = sycl.why_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"SYCL backend unavailable: {WHY}")
K, N, THREADS, CALLS = 256, 40, 6, 25


@pytest.fixture(scope="module")
def dev():
    if not any(d.kind == "cpu" for d in sycl.devices()):
        pytest.skip("no opencl:cpu SYCL device (pip install intel-opencl-rt)")
    return open_device("sycl", "cpu")


def test_threads_sharing_a_binding_get_their_own_results(dev, monkeypatch):
    packed_calls = []
    real_call = sycl_launch.PackedLaunch.__call__
    monkeypatch.setattr(sycl_launch.PackedLaunch, "__call__",
                        lambda self, values: packed_calls.append(1) or real_call(self, values))  # fmt: skip
    rng = np.random.default_rng(3)
    qt = reference.quantize(rng.standard_normal((N, K)).astype(np.float32), "q4_0")
    dq = qt.with_arrays(**{k: dev.to_device(np.ascontiguousarray(v)) for k, v in qt.arrays().items()})
    xs = [rng.standard_normal((1, K)).astype(np.float32) for _ in range(THREADS)]
    want = [qkgen.gemv(qt, x, backend="sycl", device="cpu") for x in xs]  # host arrays: bound apart
    qkgen.gemv(dq, dev.to_device(xs[0]), backend="sycl", device="cpu")  # bind once
    bad: list[str] = []

    def work(t: int) -> None:
        x = dev.to_device(xs[t])
        for i in range(CALLS):
            y = qkgen.gemv(dq, x, backend="sycl", device="cpu").to_host()
            if not np.array_equal(y, want[t]):
                bad.append(f"thread {t} call {i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad, bad[:5]
    assert len(dq._qkgen_calls) == 1  # every thread went through the one binding
    assert len(packed_calls) >= THREADS * CALLS  # ... and its packed launches


def test_a_changing_argument_must_be_usm(dev):
    qt = reference.quantize(np.ones((N, K), np.float32), "q8_0")
    src = render("dequantize", "q8_0", dev.target, dtype="f32")
    kernel = dev.compile(src)
    out = dev.empty(N * K, "f32")[0]
    blocks = dev.upload(np.ascontiguousarray(qt.arrays()["data"]))
    with pytest.raises(TypeError, match="must be USM memory"):
        sycl_launch.PackedLaunch(dev.queue, kernel, [ctypes.c_uint64(1), out, np.uint64(N * K)], (0,), (64,), (64,))
    packed = sycl_launch.PackedLaunch(dev.queue, kernel, [blocks, out, np.uint64(N * K)], (0, 1), (N * K // 16,),
                                      (64,))  # fmt: skip
    with pytest.raises(TypeError, match="use USM memory, not int"):
        packed([blocks, 5])


def test_a_warm_launch_keeps_the_weight_alive_until_the_queue_is_waited_on(dev):
    """The weight's USM memory is a fixed argument of the packed launch: the device keeps it with
    the call's values until the queue is waited on (as launch()'s event holds every argument), so a
    weight dropped right after an asynchronous call is not freed under its kernel."""
    qt = reference.quantize(np.random.default_rng(4).standard_normal((N, K)).astype(np.float32), "q8_0")
    dq = qt.with_arrays(**{k: dev.to_device(np.ascontiguousarray(v)) for k, v in qt.arrays().items()})
    x = dev.to_device(np.ones((1, K), np.float32))
    for _ in range(2):
        qkgen.gemv(dq, x, backend="sycl", device="cpu")
    fixed, values = dev._inflight[-1]  # a packed launch makes no event: its arguments are kept
    addr = dq.arrays()["data"].__sycl_usm_array_interface__["data"][0]
    assert addr in [sycl_launch._usm_pointer(a) for a in fixed if sycl_launch._usm_pointer(a) is not None]
    assert isinstance(values, tuple) and len(values) >= 2  # x and y at least
    dev.synchronize()
