"""QuantLinear: an nn.Linear whose weight is a QTensor, computed by qkgen's kernels."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..errors import QKGenValueError
from ..formats import QTensor
from . import ops, place
from .weights import QuantWeight


class QuantLinear(nn.Module):
    """y = x @ W.T + bias for x [..., K] in float32, float16 or bfloat16; y in x's dtype.

    CUDA tensors run on the CUDA backend, XPU tensors on SYCL, CPU tensors on an OpenCL or SYCL
    CPU device (`backend=`/`device=` pick one). Up to 8 rows go through the GEMV kernels; more
    rows through torch.matmul with the weight dequantized once (a bounded cache: weights.py)."""

    def __init__(self, qt: QTensor, bias: Any = None, backend: str | None = None, device: Any = None):
        super().__init__()
        if not isinstance(qt, QTensor):
            raise QKGenValueError(f"qt: {type(qt).__name__}; allowed: a qkgen.QTensor")
        if len(qt.shape) != 2:
            raise QKGenValueError(f"qt.shape: {qt.shape}; allowed: a 2-D weight [N, K]")
        if backend not in (None, *place.CPU_BACKENDS):
            raise QKGenValueError(f"backend: {backend!r}; allowed: None, {', '.join(place.CPU_BACKENDS)} "
                                  "(for CPU tensors; CUDA/XPU tensors pick their own)")  # fmt: skip
        self.out_features, self.in_features = qt.shape
        if bias is not None:
            bias = torch.as_tensor(bias).detach()
            if bias.shape != (self.out_features,) or not bias.is_floating_point():
                raise QKGenValueError(f"bias: {list(bias.shape)} {bias.dtype}; allowed: a float [{self.out_features}]")
            bias = nn.Parameter(bias.clone(), requires_grad=False)
        self.bias = bias
        self.weight_q = QuantWeight(qt, backend, device)

    @property
    def qtensor(self) -> QTensor:
        return self.weight_q.qt

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        place.check_x(x, self.in_features)
        y = torch.ops.qkgen.linear(x, self.weight_q.handle, self.out_features)
        return y if self.bias is None else y + self.bias.to(y.dtype)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"weight={self.qtensor.describe()}, bias={self.bias is not None}"  # fmt: skip

    # ---- constructors ----
    @classmethod
    def from_float(cls, linear: nn.Linear, format: Any, **opts) -> QuantLinear:
        """Quantize an nn.Linear's weight (opts as qkgen.quantize's): with the reference codec, or on
        the device where the weight is a device tensor (runtime.quantize: the same bytes)."""
        from ..runtime.quantize import quantize

        if not isinstance(linear, nn.Linear):
            raise QKGenValueError(f"linear: {type(linear).__name__}; allowed: a torch.nn.Linear")
        backend, device = opts.pop("backend", None), opts.pop("device", None)
        wd = linear.weight.detach()
        if wd.device.type != "cpu" and wd.dtype in (torch.float32, torch.float16, torch.bfloat16):
            from ..runtime.quantize import quantize_device

            return cls(quantize_device(wd.contiguous(), format, backend, device, **opts), linear.bias, backend, device)
        w = wd.to("cpu", torch.float32).numpy()
        return cls(quantize(w, format, **opts), linear.bias, backend, device)

    @classmethod
    def from_bnb(cls, module: Any, backend: str | None = None, device: Any = None) -> QuantLinear:
        """Wrap a bitsandbytes Linear4bit (or its Params4bit weight) without re-quantizing."""
        weight = getattr(module, "weight", module)
        state = getattr(weight, "quant_state", None)
        if state is None:
            raise QKGenValueError(f"module: {type(module).__name__} has no quant_state; allowed: a bitsandbytes "
                                  "Linear4bit or Params4bit that has been quantized")  # fmt: skip
        qt = QTensor.from_bnb(weight.data, state)
        return cls(qt, getattr(module, "bias", None), backend, device)

    @classmethod
    def from_gguf(cls, qt: QTensor, bias: Any = None, backend: str | None = None, device: Any = None) -> QuantLinear:
        """Wrap a QTensor from qkgen.interop.gguf.load (already [N, K])."""
        return cls(qt, bias, backend, device)


_ = ops  # the custom ops register on import
