"""SYCL memory as qkgen hands it out and takes it in: USMArray (a typed view of dpctl USM memory,
what dequantize returns for USM inputs) and torch XPU tensors (USM owned by torch's queue)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import QKGenValueError


class USMArray:
    """A typed, shaped view of device USM memory: what dequantize returns for USM inputs (dpctl
    0.22 has no array type; dpnp and others take it through __sycl_usm_array_interface__)."""

    def __init__(self, mem, dtype: Any, shape: tuple[int, ...]):
        self.mem, self.dtype, self.shape = mem, np.dtype(dtype), tuple(int(s) for s in shape)
        self._home = (None, None)  # someone else's memory: checked in full as an input

    @classmethod
    def _made(cls, mem, dtype: np.dtype, shape: tuple[int, ...], queue) -> USMArray:
        """An array over memory qkgen allocated on `queue` (SYCLDevice._own_usm trusts it as an input
        while .mem is still that memory); dtype and shape as __init__ would make them."""
        a = cls.__new__(cls)
        a.mem, a.dtype, a.shape, a._home = mem, dtype, shape, (mem, queue)
        return a

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def __sycl_usm_array_interface__(self) -> dict:
        return {**self.mem.__sycl_usm_array_interface__, "typestr": self.dtype.str, "shape": self.shape,
                "strides": None}  # fmt: skip

    def reshape(self, *shape) -> USMArray:
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if int(np.prod(shape)) != self.size:
            raise QKGenValueError(f"shape: cannot reshape {self.shape} to {shape}; "
                                  f"allowed: shapes of {self.size} elements")  # fmt: skip
        home, queue = self._home
        return USMArray._made(self.mem, self.dtype, tuple(int(s) for s in shape), queue if home is self.mem else None)

    def to_host(self) -> np.ndarray:
        """A numpy copy (bf16 as uint16 bits); waits for the kernels writing it (in-order queue)."""
        host = np.empty(self.shape, self.dtype)
        if host.nbytes:
            self.mem.sycl_queue.memcpy(host, self.mem, host.nbytes)
        return host


class ForeignPtr:
    """A USM address owned by another runtime (a torch XPU tensor) as a kernel argument. That
    runtime has its own queue, so launches using it are synchronized on both sides."""

    def __init__(self, tensor):
        self.tensor = tensor  # keeps the memory alive while the argument is

    @property
    def __sycl_usm_array_interface__(self) -> dict:
        return {"data": (self.tensor.data_ptr(), False), "shape": (0,), "typestr": "|u1", "version": 1}


def is_torch_xpu(array: Any) -> bool:
    # Looks at the object only: torch without XPU support never makes an "xpu" tensor.
    device = getattr(array, "device", None)
    return type(array).__module__.startswith("torch") and getattr(device, "type", "") == "xpu"


def c_contiguous(shape, strides) -> bool:
    if strides is None:
        return True
    expect = 1
    for n, s in zip(reversed(tuple(shape)), reversed(tuple(strides))):  # strides count elements
        if n != 1 and s != expect:
            return False
        expect *= n
    return True
