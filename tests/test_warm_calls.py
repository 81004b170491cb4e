"""The warm call path (issue 11): a call binds once per weight and kind of call (device, x's type,
dtype and shape, options), later calls reuse the binding; they still check what may change between
calls (layout, device) and refuse bad arguments by name, and they see new input values."""

import re

import numpy as np
import pytest

import qkgen
from qkgen.backends import get
from qkgen.formats import reference
from qkgen.runtime import plan

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
K, N = 128, 24


@pytest.fixture
def qt():
    return reference.quantize(np.random.default_rng(3).standard_normal((N, K)).astype(np.float32), "q4_0")


def _device_arrays(qt):
    import pyopencl.array as cla
    from qkgen.backends import open_device

    dev = open_device("opencl", None)
    arrays = {k: cla.to_device(dev.queue, np.ascontiguousarray(v)) for k, v in qt.arrays().items()}
    return dev, qt.with_arrays(**arrays)


def test_one_binding_per_kind_of_call_and_new_values_each_time(qt):
    w = reference.dequantize(qt).astype(np.float64)
    rng = np.random.default_rng(0)
    for m in (1, 1, 3, 3, 1):
        x = rng.standard_normal((m, K)).astype(np.float32)
        y = qkgen.gemv(qt, x, backend="opencl")
        assert y.shape == (m, N) and np.allclose(y, x @ w.T, rtol=1e-4, atol=1e-4)
    for _ in range(2):
        assert np.array_equal(qkgen.dequantize(qt, "f32", backend="opencl"), reference.dequantize(qt))
    assert len(qt._qkgen_calls) == 3  # M = 1, M = 3, dequantize


def test_warm_call_with_device_arrays_gives_device_arrays(qt):
    import pyopencl.array as cla

    dev, dq = _device_arrays(qt)
    w = reference.dequantize(qt).astype(np.float64)
    for seed in range(3):
        xh = np.random.default_rng(seed).standard_normal((2, K)).astype(np.float32)
        y = qkgen.gemv(dq, cla.to_device(dev.queue, xh), backend="opencl")
        assert isinstance(y, cla.Array) and y.shape == (2, N)
        assert np.allclose(y.get(), xh @ w.T, rtol=1e-4, atol=1e-4)
        d = qkgen.dequantize(dq, "f32", backend="opencl")
        assert isinstance(d, cla.Array) and d.shape == (N, K)
        assert np.array_equal(d.get(), w.astype(np.float32))


def test_warm_call_refuses_a_non_contiguous_x(qt):
    x = np.ones((1, K), np.float32)
    qkgen.gemv(qt, x, backend="opencl")
    strided = np.ones((1, 2 * K), np.float32)[:, ::2]  # same type, dtype and shape
    with pytest.raises(ValueError, match=re.escape("x: array is not contiguous; allowed: C-contiguous")):
        qkgen.gemv(qt, strided, backend="opencl")


def test_warm_call_refuses_bad_options(qt):
    x = np.ones((1, K), np.float32)
    qkgen.gemv(qt, x, backend="opencl")
    with pytest.raises(ValueError, match=re.escape("fast_decode: 1; allowed: True or False")):
        qkgen.gemv(qt, x, backend="opencl", fast_decode=1)
    with pytest.raises(ValueError, match=re.escape("path: 'fp8'; allowed: float, int8dot")):
        qkgen.gemv(qt, x, path="fp8", backend="opencl")
    with pytest.raises(ValueError, match=re.escape("x: dtype int32")):
        qkgen.gemv(qt, x.astype(np.int32), backend="opencl")


def test_a_failed_first_call_is_not_kept(qt):
    with pytest.raises(ValueError, match=re.escape("x.shape")):
        qkgen.gemv(qt, np.ones((1, K + 1), np.float32), backend="opencl")
    assert not getattr(qt, "_qkgen_calls", {})


def test_poisoned_outputs_on_a_warm_call(qt, monkeypatch):
    """POISON_OUTPUTS (the debug fill) is read at every call, not when the call was bound."""
    from qkgen.backends import open_device

    dev, asked = open_device("opencl", None), []
    allocator = dev.allocator

    def spy(*a, **kw):  # the call's allocations, each with the poison it was asked for
        alloc = allocator(*a, **kw)
        return lambda like, poison: asked.append(poison) or alloc(like, poison)

    monkeypatch.setattr(dev, "allocator", spy)
    x = np.ones((1, K), np.float32)
    for poison in (False, True, False, True):
        monkeypatch.setattr(plan, "POISON_OUTPUTS", poison)
        qkgen.gemv(qt, x, backend="opencl")
    assert asked == [False, True, False, True]


def test_warm_int8dot_with_device_arrays_equals_the_host_path(qt):
    """Two launches (quantize x to q8_1, then the int8 product) on the warm device-array path give
    what the host-array path gives."""
    import pyopencl.array as cla

    dev, dq = _device_arrays(qt)
    for seed in range(3):
        xh = np.random.default_rng(seed).standard_normal((3, K)).astype(np.float32)
        y = qkgen.gemv(dq, cla.to_device(dev.queue, xh), path="int8dot", backend="opencl")
        assert isinstance(y, cla.Array) and y.shape == (3, N)
        assert np.array_equal(y.get(), qkgen.gemv(qt, xh, path="int8dot", backend="opencl"))


def test_out_is_for_torch_cuda_tensors_only(qt):
    """gemv's and dequantize's out: refused by name where the call makes its own outputs (numpy
    results, pyopencl arrays), cold and warm; tests/gpu/test_gemv_out.py takes them with torch CUDA
    tensors."""
    import pyopencl.array as cla

    x = np.random.default_rng(4).standard_normal((1, K)).astype(np.float32)
    for _ in range(2):
        with pytest.raises(qkgen.QKGenValueError, match="^out: given where the call makes its own"):
            qkgen.gemv(qt, x, backend="opencl", out=np.empty((1, N), np.float32))
    dev, dq = _device_arrays(qt)
    xd = cla.to_device(dev.queue, x)
    for _ in range(2):
        with pytest.raises(qkgen.QKGenValueError, match="^out: "):
            qkgen.gemv(dq, xd, backend="opencl", out=cla.empty(dev.queue, (1, N), np.float32))
        with pytest.raises(qkgen.QKGenValueError, match="^out: given where the call makes its own"):
            qkgen.dequantize(qt, "f32", backend="opencl", out=np.empty((N, K), np.float32))


@pytest.mark.parametrize("device_arrays", [False, True])
def test_a_bound_is_in_no_reference_cycle(qt, device_arrays):
    """A Bound (and the device buffers it holds) goes when its weight does, by reference counts
    alone: no garbage collection is needed, so none can free device memory at a bad moment (a CUDA
    graph capture in progress)."""
    import gc
    import weakref

    import pyopencl.array as cla

    x = np.random.default_rng(6).standard_normal((2, K)).astype(np.float32)
    qt = qt.with_arrays(**qt.arrays())  # a weight of the test's own (pytest holds the fixture's)
    if device_arrays:
        dev, qt = _device_arrays(qt)
        x = cla.to_device(dev.queue, x)
    gc.collect()
    gc.disable()
    try:
        for path in ("float", "int8dot"):
            for _ in range(3):  # binding, then warm calls (the lean way for device arrays)
                qkgen.gemv(qt, x, backend="opencl", path=path)
        refs = [weakref.ref(b) for b in qt._qkgen_calls.values()]
        assert len(refs) == 2
        del qt
        assert all(r() is None for r in refs)
    finally:
        gc.enable()
