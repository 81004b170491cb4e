"""Array interop of the CUDA backend: torch CUDA tensors, pycuda GPUArrays and anything with
__cuda_array_interface__ are kernel arguments as they are (their device address), after checks of
device, context, dtype, layout and alignment; numpy is copied in. Outputs are made in the caller's
array type (torch for torch inputs).

Every device is used through its primary context, the one torch, cupy and numba use, so a torch
tensor's data_ptr() is simply a kernel argument. A launch touching a torch tensor goes on torch's
current stream (TorchPtr marks those addresses).
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any

import numpy as np

from ..errors import QKGenValueError
from .base import VECTOR_ALIGN, Device, host_dtype, torch_dtype
from .cuda_driver import (CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CUDAError,
                          DeviceBuffer)  # fmt: skip

class TorchPtr(int):
    """A device address owned by torch: launches that use one go on torch's current stream."""


def is_torch_tensor(a: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def is_gpuarray(a: Any) -> bool:
    mod = sys.modules.get("pycuda.gpuarray")
    return mod is not None and isinstance(a, mod.GPUArray)


def _cuda_array_interface(a: Any) -> dict | None:
    if isinstance(a, np.ndarray):
        return None
    try:
        cai = getattr(a, "__cuda_array_interface__", None)
    except Exception:  # noqa: BLE001 (a CPU tensor of some framework may refuse the attribute)
        return None
    return cai if isinstance(cai, dict) else None


def _c_contiguous(shape: tuple, strides: tuple | None, itemsize: int) -> bool:
    if strides is None:
        return True
    want = itemsize
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != want:
            return False
        want *= size
    return True


def torch_stream(ordinal: int):
    """A function giving torch's current stream handle on GPU `ordinal` (per thread): torch's raw
    getter where it has one (what torch.compile's generated code calls), else the public API."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return functools.partial(raw, ordinal)
    return lambda: torch.cuda.current_stream(ordinal).cuda_stream


class CUDAArrays(Device):
    """The memory half of CUDADevice (which provides ordinal, ctx, drv, cu and _active)."""

    # ---- inputs ----
    def is_native(self, array: Any) -> bool:
        if is_torch_tensor(array):
            return array.is_cuda
        return is_gpuarray(array) or _cuda_array_interface(array) is not None

    def as_input(self, array: Any, name: str, dtypes: tuple[str, ...]) -> Any:
        if is_torch_tensor(array) and not array.is_cuda:
            raise self._cpu_tensor_error(array, name)
        if self.is_native(array):
            return self._native(array, name, dtypes)
        return super().as_input(array, name, dtypes)  # numpy: copied in

    def input_converter(self, sample: Any, name: str, dtypes: tuple[str, ...]):
        """For torch CUDA tensors: the device, layout and alignment checks only (type, dtype and
        shape are the caller's key); anything failing them goes through as_input, whose error says
        what is allowed."""
        if not (is_torch_tensor(sample) and sample.is_cuda):
            return super().input_converter(sample, name, dtypes)
        ordinal, as_input = self.ordinal, self.as_input

        def convert(t: Any) -> Any:
            if t.get_device() == ordinal and t.is_contiguous():
                ptr = t.data_ptr()
                if not ptr % VECTOR_ALIGN:
                    return TorchPtr(ptr)
            return as_input(t, name, dtypes)

        return convert

    def native_buffer(self, array: Any, name: str) -> Any:
        return self._native(array, name, None)

    def _cpu_tensor_error(self, t: Any, name: str) -> QKGenValueError:
        return QKGenValueError(
            f"{name}: torch tensor is on {t.device}; allowed: CUDA tensors on cuda:{self.ordinal} or numpy "
            f"arrays: move it with .cuda({self.ordinal}) or pass .numpy()"
        )

    def _native(self, a: Any, name: str, dtypes: tuple[str, ...] | None) -> int:
        if is_torch_tensor(a):
            if a.device.index != self.ordinal:
                raise self._other_gpu(name, f"cuda:{a.device.index}")
            dt = str(a.dtype).replace("torch.", "")
            return TorchPtr(self._checked(name, a.data_ptr(), dt, a.is_contiguous(), dtypes))
        if is_gpuarray(a):
            ptr, dt, contiguous = int(a.gpudata), a.dtype.name, bool(a.flags.c_contiguous)
            stream = None
        else:
            cai = _cuda_array_interface(a)
            ptr, typ = int(cai["data"][0]), np.dtype(cai["typestr"])
            dt, contiguous = typ.name, _c_contiguous(tuple(cai["shape"]), cai.get("strides"), typ.itemsize)
            stream = cai.get("stream")
        ptr = self._checked(name, ptr, dt, contiguous, dtypes)
        with self._active():
            self._check_owner(name, ptr)
            if stream:  # __cuda_array_interface__ v3: the producer's stream must be done with it
                self.cu("cuStreamSynchronize", ctypes.c_void_p(int(stream)))
        return ptr

    def _checked(self, name: str, ptr: int, dtype: str, contiguous: bool, dtypes: tuple | None) -> int:
        if dtypes and dtype not in dtypes:
            raise QKGenValueError(f"{name}: dtype {dtype}; allowed: {', '.join(dtypes)}")
        if not contiguous:
            raise QKGenValueError(
                f"{name}: array is not contiguous; allowed: C-contiguous arrays (.contiguous())"
            )
        if ptr % VECTOR_ALIGN:
            raise QKGenValueError(
                f"{name}: misaligned: starts at address 0x{ptr:x}, {ptr % VECTOR_ALIGN} bytes past a "
                f"{VECTOR_ALIGN}-byte boundary; allowed: {VECTOR_ALIGN}-byte aligned buffers (a fresh "
                "allocation or .clone(), not a view at an offset)"
            )
        return ptr

    def _other_gpu(self, name: str, where: str) -> QKGenValueError:
        return QKGenValueError(f"{name}: array is on another GPU ({where}); allowed: arrays on "
                               f"cuda:{self.ordinal} ({self.info.name})")  # fmt: skip

    def _check_owner(self, name: str, ptr: int) -> None:
        """Non-torch memory: it must be device memory of this GPU's primary context."""
        ordinal, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64(ptr)
        try:
            self.cu("cuPointerGetAttribute", ctypes.byref(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)
            self.cu("cuPointerGetAttribute", ctypes.byref(ctx), CU_POINTER_ATTRIBUTE_CONTEXT, p)
        except CUDAError as e:
            raise QKGenValueError(
                f"{name}: 0x{ptr:x} is not CUDA memory ({e}); allowed: device arrays"
            ) from None
        if ordinal.value != self.ordinal:
            raise self._other_gpu(name, f"cuda:{ordinal.value}")
        if ctx.value and ctx.value != self.ctx.handle:
            raise QKGenValueError(
                f"{name}: array belongs to another CUDA context on this GPU (pycuda.autoinit's?); allowed: "
                "memory of the primary context (torch, cupy, or pycuda after Device.retain_primary_context())"
            )

    def upload(self, host: np.ndarray):
        buf = DeviceBuffer(self.cu, self.ctx.handle, host.nbytes)
        buf.upload(host)
        return buf

    # ---- outputs ----
    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False) -> tuple[Any, Any]:
        nbytes = count * host_dtype(dtype).itemsize
        if is_torch_tensor(like):
            import torch

            if not like.is_cuda:
                raise self._cpu_tensor_error(like, "data")
            if like.device.index != self.ordinal:
                raise self._other_gpu("data", str(like.device))
            out = torch.empty(count, dtype=torch_dtype(torch, dtype), device=like.device)
            if poison:  # all-ones bytes: NaN in f32, f16 and bf16
                out.view(torch.uint8).fill_(0xFF)
            return TorchPtr(out.data_ptr()), out
        with self._active():
            if like is not None and self.is_native(like):  # GPUArray or another CUDA array: a GPUArray
                from pycuda import gpuarray

                out = gpuarray.empty((count,), host_dtype(dtype))
                buf = out.gpudata
                if poison:
                    self.drv.memset_d8(buf, 0xFF, nbytes)
                return buf, out
        out = buf = DeviceBuffer(self.cu, self.ctx.handle, nbytes)
        if poison:
            buf.fill(0xFF)
        return buf, out

    def zeros(self, count: int, dtype: str, like: Any = None) -> tuple[Any, Any]:
        buf, out = self.empty(count, dtype, like=like)  # checks like's device
        if is_torch_tensor(like):
            out.zero_()
        elif isinstance(buf, DeviceBuffer):
            buf.fill(0)
        else:
            with self._active():
                self.drv.memset_d8(buf, 0, count * host_dtype(dtype).itemsize)
        return buf, out

    def _torch_here(self, like: Any) -> bool:
        """Whether `like` is a torch tensor on this GPU (outputs like it are torch tensors here)."""
        return is_torch_tensor(like) and like.is_cuda and like.device.index == self.ordinal

    def allocator(self, count: int, dtype: str, like: Any, shape: tuple | None):
        """For torch CUDA outputs: a new tensor in the final shape and dtype worked out once."""
        if not self._torch_here(like):
            return super().allocator(count, dtype, like, shape)
        import torch

        size, tdtype = shape or (count,), torch_dtype(torch, dtype)

        def alloc(like: Any, poison: bool) -> tuple[Any, Any]:
            out = like.new_empty(size, dtype=tdtype)  # on like's device (checked): cheaper than torch.empty
            if poison:  # all-ones bytes: NaN in f32, f16 and bf16
                out.view(torch.uint8).fill_(0xFF)
            return TorchPtr(out.data_ptr()), out

        return alloc

    def output_converter(self, like: Any, count: int, dtype: str, shape: tuple | None):
        """torch tensors on this GPU: a caller's tensor of the output's dtype and shape, contiguous,
        16-byte aligned, not requiring grad (it is written behind autograd's back)."""
        if not self._torch_here(like):
            return None
        import torch

        size, tdtype, ordinal = torch.Size(shape or (count,)), torch_dtype(torch, dtype), self.ordinal

        def convert(out: Any, poison: bool) -> tuple[Any, Any]:
            if not (is_torch_tensor(out) and out.dtype == tdtype and out.shape == size and out.get_device() == ordinal
                    and out.is_contiguous() and not out.data_ptr() % VECTOR_ALIGN and not out.requires_grad):
                got = (f"{type(out).__name__} {getattr(out, 'dtype', '')} {list(getattr(out, 'shape', []))} on "
                       f"{getattr(out, 'device', '?')}")
                raise QKGenValueError(f"out: {got}; allowed: a contiguous torch tensor on cuda:{ordinal}, {tdtype}, "
                                      f"shape {list(size)}, {VECTOR_ALIGN}-byte aligned, not requiring grad")
            if poison:  # all-ones bytes: NaN in f32, f16 and bf16
                out.view(torch.uint8).fill_(0xFF)
            return TorchPtr(out.data_ptr()), out

        return convert

    def scratch_keyer(self, like: Any):
        """torch tensors on this GPU: torch's current stream there, the stream the launchers take
        (launches on one stream run in order), except while it captures a CUDA graph, which must
        keep buffers of its own (torch gives them from the graph's pool)."""
        if not self._torch_here(like):
            return None
        import torch

        capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", torch.cuda.is_current_stream_capturing)
        stream = torch_stream(self.ordinal)
        return lambda: None if capturing() else stream()

    def download(self, array: Any, dtype: str, count: int) -> np.ndarray:
        if is_torch_tensor(array):
            import torch

            t = array.detach().cpu()
            return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()
        host = np.empty(count, host_dtype(dtype))
        if isinstance(array, DeviceBuffer):
            array.download(host)
            return host
        with self._active():
            if is_gpuarray(array):
                return array.get()
            self.drv.memcpy_dtoh(host, array)
        return host
