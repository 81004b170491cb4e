"""A warm call's scratch outputs (runtime.plan.Bound: an output one launch writes and a later launch
of the same call reads, the int8dot path's q8_1 copy of x) are made once per scratch key and reused
by later calls of that key, where the device gives keys (CUDA with torch: the stream, which the GPU
suite tests, tests/gpu/test_cuda_graph.py; OpenCL and SYCL device arrays: the device's in-order
queue). On Intel's CPU OpenCL with keys the test gives: results stay those of fresh buffers,
poisoned calls and keyless ones make their own (poisoned ones keep the newest), and the keys kept are
bounded; then the backends' own keys."""

import numpy as np
import pytest

import qkgen
from qkgen.backends import get, open_device
from qkgen.formats import reference
from qkgen.runtime import plan

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
K, N = 256, 40


@pytest.fixture
def setup(monkeypatch):
    """(device, weight as device arrays, device x of a seed, the u8 buffers its allocators made, the key box)."""
    import pyopencl.array as cla

    dev = open_device("opencl", None)
    qt = reference.quantize(np.random.default_rng(5).standard_normal((N, K)).astype(np.float32), "q5_1")
    dq = qt.with_arrays(**{k: cla.to_device(dev.queue, np.ascontiguousarray(v)) for k, v in qt.arrays().items()})
    made, key = [], {"now": "queue"}
    allocator = type(dev).allocator

    def counting_allocator(self, count, dtype, like, shape):
        alloc = allocator(self, count, dtype, like, shape)
        if dtype != "u8":  # quantize_q8_1's output: the int8dot path's scratch
            return alloc

        def counted(like, poison):
            out = alloc(like, poison)
            made.append(out[0])
            return out

        return counted

    monkeypatch.setattr(type(dev), "allocator", counting_allocator)
    monkeypatch.setattr(type(dev), "scratch_keyer", lambda self, like: lambda: key["now"])

    def x_of(seed, m=2):
        return cla.to_device(dev.queue, np.random.default_rng(seed).standard_normal((m, K)).astype(np.float32))

    return dev, qt, dq, x_of, made, key


def _want(qt, x):
    return qkgen.gemv(qt, x.get(), path="int8dot", backend="opencl")  # host arrays: fresh buffers each call


def test_one_scratch_per_key_and_the_same_results(setup):
    dev, qt, dq, x_of, made, key = setup
    for seed in range(5):
        y = qkgen.gemv(dq, x_of(seed), path="int8dot", backend="opencl")
        assert np.array_equal(y.get(), _want(qt, x_of(seed)))
    bound = next(b for b in dq._qkgen_calls.values())
    assert list(bound.scratch) == ["queue"] and list(bound.scratch["queue"]) == ["xq"]
    # the first call's own (the generic path), then one for the key; the host-path calls above make their own
    ours = [b for b in made if b is bound.scratch["queue"]["xq"][0]]
    assert len(ours) == 1
    key["now"] = "other"
    y = qkgen.gemv(dq, x_of(9), path="int8dot", backend="opencl")
    assert np.array_equal(y.get(), _want(qt, x_of(9)))
    assert sorted(bound.scratch) == ["other", "queue"]
    assert bound.scratch["other"]["xq"][0] is not bound.scratch["queue"]["xq"][0]


def test_keyless_and_poisoned_calls_make_their_own(setup, monkeypatch):
    dev, qt, dq, x_of, made, key = setup
    qkgen.gemv(dq, x_of(0), path="int8dot", backend="opencl")
    bound = next(b for b in dq._qkgen_calls.values())
    key["now"] = None  # e.g. a CUDA graph being captured
    for seed in (1, 2):
        before = len(made)
        y = qkgen.gemv(dq, x_of(seed), path="int8dot", backend="opencl")
        assert len(made) == before + 1 and np.array_equal(y.get(), _want(qt, x_of(seed)))
    assert bound.scratch == {}
    key["now"] = "queue"
    monkeypatch.setattr(plan, "POISON_OUTPUTS", True)
    for seed in (3, 4):  # the keyed way still, a fresh poisoned buffer each call (the test suites' case)
        before = len(made)
        y = qkgen.gemv(dq, x_of(seed), path="int8dot", backend="opencl")
        assert len(made) == before + 1 and np.array_equal(y.get(), _want(qt, x_of(seed)))
        assert bound.scratch["queue"]["xq"][0] is made[before]


def test_the_keys_kept_are_bounded(setup, monkeypatch):
    dev, qt, dq, x_of, made, key = setup
    monkeypatch.setattr(plan, "MAX_SCRATCH_KEYS", 2)
    qkgen.gemv(dq, x_of(0), path="int8dot", backend="opencl")
    bound = next(b for b in dq._qkgen_calls.values())
    kept = []
    for i, k in enumerate("abcab"):
        key["now"] = k
        y = qkgen.gemv(dq, x_of(i), path="int8dot", backend="opencl")
        assert np.array_equal(y.get(), _want(qt, x_of(i)))
        kept.append("".join(sorted(bound.scratch)))
    assert kept == ["a", "ab", "c", "ac", "b"]  # a third key clears the two kept


def test_the_backends_own_keys(rng):
    """Unpatched: OpenCL (pyopencl arrays, its in-order queue) and SYCL (USM arrays, its in-order
    queue) give one key; host arrays none. Warm two-launch calls keep one scratch and stay right."""
    ran = 0
    for backend in ("opencl", "sycl"):
        if not get(backend).is_available():
            continue
        ran += 1
        dev = open_device(backend, None)
        assert dev.scratch_keyer(np.zeros(4, np.float32)) is None
        if backend == "opencl":
            import pyopencl.array as cla

            to_dev = lambda a: cla.to_device(dev.queue, np.ascontiguousarray(a))  # noqa: E731
        else:
            to_dev = lambda a: dev.to_device(np.ascontiguousarray(a))  # noqa: E731
        qt = reference.quantize(rng.standard_normal((N, K)).astype(np.float32), "q4_1")
        on_dev = qt.with_arrays(**{k: to_dev(a) for k, a in qt.arrays().items()})
        for seed in range(4):
            xh = np.random.default_rng(seed).standard_normal((3, K)).astype(np.float32)
            y = qkgen.gemv(on_dev, to_dev(xh), path="int8dot", backend=backend)
            host = y.get() if hasattr(y, "get") else y.to_host()
            assert np.array_equal(host, qkgen.gemv(qt, xh, path="int8dot", backend=backend)), (backend, seed)
        bound = next(b for b in on_dev._qkgen_calls.values())
        (key,) = bound.scratch
        assert key == ("queue", id(dev.queue)) and list(bound.scratch[key]) == ["xq"]
    if not ran:
        pytest.skip("no OpenCL or SYCL device")
