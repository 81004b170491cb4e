"""A call's OpenCL outputs are made without pyopencl's per-call argument checks (backends/
opencl_arrays.py): the arrays must be what the checked constructor makes, each with its own buffer
and event list, and a pyopencl whose private constructor path differs must get the checked one."""

import numpy as np
import pytest

from qkgen.backends import get, open_device, opencl_arrays

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")


@pytest.mark.parametrize("shape, dtype", [((7,), np.float32), ((3, 5), np.float16), ((2, 3, 4), np.uint8),
                                          ((1, 64), np.uint16)])  # fmt: skip
def test_builder_arrays_are_the_checked_constructors(shape, dtype):
    import pyopencl as cl
    import pyopencl.array as cla

    dev = open_device("opencl", None)
    build = opencl_arrays.array_builder(dev.queue, shape, np.dtype(dtype))
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    bufs = [cl.Buffer(dev.ctx, cl.mem_flags.READ_WRITE, nbytes) for _ in range(2)]
    assert build.__name__ == "unchecked"  # the installed pyopencl's private path passed the probe
    a, b = build(bufs[0]), build(bufs[1])
    want = cla.Array(dev.queue, shape, dtype, data=bufs[0])
    for f in ("shape", "strides", "size", "nbytes", "dtype", "offset", "queue", "context"):
        assert getattr(a, f) == getattr(want, f), f
    assert a.flags.c_contiguous and a.base_data is bufs[0] and b.base_data is bufs[1] and a.events is not b.events
    host = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    a.set(host)
    b.set((host + 1).astype(dtype))
    assert np.array_equal(a.get(), host)  # b's writes land in its own buffer


def test_a_constructor_that_refuses_the_fast_path_gets_the_checked_one(monkeypatch):
    import pyopencl as cl
    import pyopencl.array as cla

    dev = open_device("opencl", None)
    real = cla.Array

    class NoFastPath(real):
        def __init__(self, *a, _fast=False, **kw):
            if _fast:
                raise TypeError("no _fast here")
            super().__init__(*a, **kw)

    monkeypatch.setattr(cla, "Array", NoFastPath)
    build = opencl_arrays.array_builder(dev.queue, (4, 4), np.dtype(np.float32))
    arr = build(cl.Buffer(dev.ctx, cl.mem_flags.READ_WRITE, 64))
    assert type(arr) is NoFastPath and arr.shape == (4, 4)
    arr.set(np.full((4, 4), 2.0, np.float32))
    assert np.array_equal(arr.get(), np.full((4, 4), 2.0, np.float32))


def test_a_poisoned_output_is_all_ones_before_any_launch():
    """The allocator's poison fill (all-ones bytes: NaN in f32, f16 and bf16), read back as made."""
    dev = open_device("opencl", None)
    alloc = dev.allocator(24, "f32", like=object(), shape=(4, 6))
    _, arr = alloc(like=object(), poison=True)
    assert arr.shape == (4, 6) and (arr.get().view(np.uint32) == 0xFFFFFFFF).all()
    _, flat = alloc(like=None, poison=False)
    assert flat.shape == (24,)


def test_an_allocator_shape_must_hold_the_count():
    from qkgen.errors import QKGenValueError

    with pytest.raises(QKGenValueError, match="shape: .* 24 elements"):
        open_device("opencl", None).allocator(24, "f32", like=object(), shape=(5, 5))
