"""The host side of a warm SYCL call (issue 11): USMArrays qkgen made on the device's queue skip
dpctl's pointer queries as inputs, while foreign, replaced, misaligned or other-context memory still
gets every check and its error."""

import numpy as np
import pytest

import qkgen
from qkgen.backends import get, open_device
from qkgen.backends.sycl_usm import USMArray
from qkgen.errors import QKGenValueError
from qkgen.formats import reference

sycl = get("sycl")
WHY = sycl.why_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"SYCL backend unavailable: {WHY}")
K, N = 256, 40
F32 = ("float32",)


@pytest.fixture(scope="module")
def dev():
    if not any(d.kind == "cpu" for d in sycl.devices()):
        pytest.skip("no opencl:cpu SYCL device (pip install intel-opencl-rt)")
    return open_device("sycl", "cpu")


@pytest.fixture(scope="module")
def weight(dev):
    qt = reference.quantize(np.random.default_rng(5).standard_normal((N, K)).astype(np.float32), "q8_0")
    return qt, qt.with_arrays(**{k: dev.to_device(np.ascontiguousarray(v)) for k, v in qt.arrays().items()})


class _Shifted:
    """USM memory `shift` bytes into another allocation (a view dpctl makes from the interface)."""

    def __init__(self, mem, shift: int, nbytes: int):
        self.mem, self.shift, self.nbytes = mem, shift, nbytes

    @property
    def __sycl_usm_array_interface__(self):
        return {**self.mem.__sycl_usm_array_interface__, "data": (self.mem._pointer + self.shift, False),
                "shape": (self.nbytes,)}  # fmt: skip


def _x(dev, rows=1):
    return dev.to_device(np.random.default_rng(rows).standard_normal((rows, K)).astype(np.float32))


def test_own_arrays_skip_the_pointer_queries(dev, weight, monkeypatch):
    import dpctl.memory

    qt, dq = weight
    x = _x(dev)
    want = qkgen.gemv(qt, x.to_host(), backend="sycl", device="cpu")
    qkgen.gemv(dq, x, backend="sycl", device="cpu")  # binds
    calls = []
    real = dpctl.memory.as_usm_memory
    monkeypatch.setattr(dpctl.memory, "as_usm_memory", lambda a: calls.append(a) or real(a))
    for _ in range(3):
        assert np.array_equal(qkgen.gemv(dq, x, backend="sycl", device="cpu").to_host(), want)
    assert calls == []
    assert dev.native_buffer(x, "x") is x.mem
    assert dev.native_buffer(x.reshape(K), "x") is x.mem  # a reshaped view is still qkgen's memory


def test_memory_qkgen_did_not_make_gets_every_check(dev, monkeypatch):
    import dpctl.memory

    calls = []
    real = dpctl.memory.as_usm_memory
    monkeypatch.setattr(dpctl.memory, "as_usm_memory", lambda a: calls.append(a) or real(a))
    x = _x(dev)
    theirs = USMArray(x.mem, np.float32, (1, K))  # a user's array over the same memory: checked in full
    assert dev.input_converter(x, "x", F32)(theirs) is not x.mem
    assert len(calls) == 1
    assert dev.input_converter(theirs, "x", F32)(theirs) is not None and len(calls) == 2


def test_replaced_or_misaligned_memory_is_refused(dev, weight):
    import dpctl.memory

    _, dq = weight
    x = _x(dev)
    convert = dev.input_converter(x, "x", F32)
    assert convert(x) is x.mem
    base = dev.upload(np.zeros(2 * K * 4, np.uint8))
    x.mem = dpctl.memory.MemoryUSMDevice(_Shifted(base, 4, K * 4))  # .mem replaced: the full checks again
    with pytest.raises(QKGenValueError, match=r"x: USM address .* is not 16-byte aligned; allowed: addresses"):
        convert(x)
    y = _x(dev)
    qkgen.gemv(dq, y, backend="sycl", device="cpu")  # binds with good memory, then a bad one comes
    y.mem = x.mem
    with pytest.raises(QKGenValueError, match="x: USM address .* is not 16-byte aligned"):
        qkgen.gemv(dq, y, backend="sycl", device="cpu")
    with pytest.raises(QKGenValueError, match="x: dtype float64; allowed: float32"):
        convert(dev.to_device(np.zeros((1, K), np.float64)))


def test_memory_of_another_context_is_refused(dev):
    import dpctl
    import dpctl.memory

    q2 = dpctl.SyclQueue(dpctl.SyclContext([dev.sdev]), dev.sdev, property=["in_order"])  # a context of its own
    assert q2.sycl_context != dev.queue.sycl_context
    mem = dpctl.memory.MemoryUSMDevice(K * 4, queue=q2)
    other = USMArray._made(mem, np.dtype(np.float32), (1, K), q2)  # what a device on that context makes
    with pytest.raises(QKGenValueError, match="x: USM memory .*another device.*; allowed: USM memory of"):
        dev.input_converter(_x(dev), "x", F32)(other)
    with pytest.raises(QKGenValueError, match="x: USM memory .*another device"):
        dev.as_input(other, "x", F32)


def test_each_warm_call_gets_its_own_output(dev, weight):
    qt, dq = weight
    xs = [_x(dev, rows) for rows in (1, 1, 3)]
    outs = [qkgen.gemv(dq, x, backend="sycl", device="cpu") for x in xs for _ in range(3)]
    assert len({o.mem._pointer for o in outs}) == len(outs)  # no block handed out twice while alive
    for i, x in enumerate(xs):
        want = qkgen.gemv(qt, x.to_host(), backend="sycl", device="cpu")
        for o in outs[3 * i:3 * i + 3]:
            assert o.shape == want.shape and o.dtype == want.dtype and np.array_equal(o.to_host(), want)
    assert dev.native_buffer(outs[0], "x") is outs[0].mem  # an output is qkgen's memory as a next input


def test_allocator_checks_once_and_poisons(dev):
    alloc = dev.allocator(12, "f32", _x(dev), (3, 4))
    mem, arr = alloc(None, True)
    assert arr.shape == (12,) and arr.dtype == np.float32  # host outputs are flat (downloaded)
    assert np.isnan(arr.to_host()).all()
    mem, arr = alloc(_x(dev), False)
    assert arr.shape == (3, 4) and arr.mem is mem and dev.native_buffer(arr, "x") is mem
    with pytest.raises(QKGenValueError, match=r"shape: \(5, 4\) for an output of 12 elements"):
        dev.allocator(12, "f32", _x(dev), (5, 4))
    with pytest.raises(QKGenValueError, match="output: .* bytes; allowed: at most"):
        dev.allocator(2**62, "f32", _x(dev), None)


def test_a_packed_launch_without_event_still_reports_errors(dev):
    from qkgen.backends import sycl_launch
    from qkgen.backends.sycl_native import SyclError
    from qkgen.kernels.render import render

    qt = reference.quantize(np.ones((N, K), np.float32), "q8_0")
    kernel = dev.compile(render("dequantize", "q8_0", dev.target, dtype="f32"))
    out, arr = dev.empty(N * K, "f32")
    blocks = dev.upload(np.ascontiguousarray(qt.arrays()["data"]))
    good = sycl_launch.PackedLaunch(dev.queue, kernel, [blocks, out, np.uint64(N * K)], (0, 1), (N * K,), (64,))
    kept = good([blocks, out])
    assert kept[1] == (blocks, out)  # no event: the caller keeps the arguments until the queue is waited on
    want = qkgen.dequantize(qt, backend="sycl", device="cpu").ravel()
    assert np.array_equal(arr.to_host(), want)  # in-order: the copy follows the kernel
    bad = sycl_launch.PackedLaunch(dev.queue, kernel, [blocks, out, np.uint64(N * K)], (0, 1), (1 << 20,), (1 << 20,))
    with pytest.raises(SyclError, match="launching .*SYCL exception"):
        bad([blocks, out])


def test_synchronize_waits_for_launches_without_events(dev):
    """Read on the host straight from shared USM (no queue copy that would order itself after the
    kernel): the queue wait alone must have covered the event-less launch."""
    import dpctl.memory
    from qkgen.backends import sycl_launch
    from qkgen.kernels.render import render

    n, k = 400, 2560
    qt = reference.quantize(np.random.default_rng(6).standard_normal((n, k)).astype(np.float32), "q8_0")
    kernel = dev.compile(render("dequantize", "q8_0", dev.target, dtype="f32"))
    out = dpctl.memory.MemoryUSMShared(n * k * 4, queue=dev.queue)
    out.memset(0xFF)
    blocks = dev.upload(np.ascontiguousarray(qt.arrays()["data"]))
    packed = sycl_launch.PackedLaunch(dev.queue, kernel, [blocks, out, np.uint64(n * k)], (0, 1), (n * k,), (64,))
    dev._track(packed([blocks, out]))
    dev.synchronize()
    assert dev._inflight == []
    want = qkgen.dequantize(qt, backend="sycl", device="cpu").ravel()
    assert np.array_equal(np.frombuffer(out, np.float32), want)
