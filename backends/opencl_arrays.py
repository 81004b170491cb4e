"""pyopencl Arrays over new buffers, made cheaply for a call's outputs.

pyopencl's Array constructor checks its arguments (shape, strides, allocator, context) at about
40 us a call on a small host (Intel's CPU runtime on 2 cores; a reshape costs as much again), more
than the buffer (2 us) and often more than the kernel. A call's output has the same shape, strides
and dtype every time, so they are checked once, when the call is bound, and each call makes its array
by the constructor's unchecked path, the one pyopencl's own Array methods take. That path is
pyopencl's private API: it is used only after it has made, over a one-byte buffer, an array that
matches the checked constructor's in every attribute; elsewhere the checked constructor is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np


def array_builder(queue: Any, shape: tuple[int, ...], dtype: np.dtype) -> Callable[[Any], Any]:
    """buf -> a C-contiguous pyopencl Array of `shape` and `dtype` over buffer `buf` on `queue`."""
    import pyopencl as cl
    import pyopencl.array as cla

    shape, dtype = tuple(int(s) for s in shape), np.dtype(dtype)
    size = math.prod(shape)
    strides = tuple(dtype.itemsize * math.prod(shape[i + 1:]) for i in range(len(shape)))
    context = queue.context

    def checked(buf: Any) -> Any:
        return cla.Array(queue, shape, dtype, data=buf)

    def unchecked(buf: Any) -> Any:
        return cla.Array(None, shape, dtype, strides=strides, data=buf, offset=0, events=None, _fast=True,
                         _size=size, _context=context, _queue=queue)  # fmt: skip

    probe = cl.Buffer(context, cl.mem_flags.READ_WRITE, 1)
    slow = checked(probe)  # the arguments themselves are checked here, once
    try:
        fast = unchecked(probe)
    except Exception:  # a pyopencl whose private path takes other arguments or fails
        return checked
    return unchecked if _same(fast, slow) else checked


def _same(a: Any, b: Any) -> bool:
    facts = ("shape", "strides", "size", "nbytes", "dtype", "offset", "queue", "context", "allocator")
    flags = ("c_contiguous", "f_contiguous", "forc")
    return (all(getattr(a, f) == getattr(b, f) for f in facts)
            and all(getattr(a.flags, f) == getattr(b.flags, f) for f in flags)
            and a.events is not b.events and a.events == b.events == [])  # fmt: skip
