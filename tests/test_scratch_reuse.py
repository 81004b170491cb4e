"""A warm call's scratch outputs (runtime.plan.Bound: an output one launch writes and a later launch
of the same call reads, the int8dot path's q8_1 copy of x) are made once per scratch key and reused
by later calls of that key, where the device gives keys (CUDA with torch: the stream; the GPU suite
tests that, tests/gpu/test_cuda_graph.py). Here on Intel's CPU OpenCL, whose in-order queue is given
a key by the test: results stay those of fresh buffers, poisoned calls and keyless ones make their
own (poisoned ones keep the newest), and the keys kept are bounded."""

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
    """(device, weight as device arrays, device x of a seed, the u8 buffers empty() made, the key box)."""
    import pyopencl.array as cla

    dev = open_device("opencl", None)
    qt = reference.quantize(np.random.default_rng(5).standard_normal((N, K)).astype(np.float32), "q5_1")
    dq = qt.with_arrays(**{k: cla.to_device(dev.queue, np.ascontiguousarray(v)) for k, v in qt.arrays().items()})
    made, key = [], {"now": "queue"}
    empty = type(dev).empty

    def counting_empty(self, count, dtype, like=None, poison=False):
        out = empty(self, count, dtype, like=like, poison=poison)
        if dtype == "u8":  # quantize_q8_1's output: the int8dot path's scratch
            made.append(out[0])
        return out

    monkeypatch.setattr(type(dev), "empty", counting_empty)
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


def test_opencl_gives_no_keys_by_default():
    dev = open_device("opencl", None)
    assert dev.scratch_keyer(None) is None
