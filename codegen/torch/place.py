"""Where a torch tensor's computation runs, and torch <-> host array conversion.

CUDA tensors -> the CUDA backend on the same GPU; XPU tensors -> SYCL; CPU tensors -> a CPU
device of OpenCL or SYCL (QKGEN_BACKEND picks between them when set to one of them; a vendor
runtime before pocl). Host arrays travel as numpy (bf16 as uint16 bits, qkgen's host form).
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch

from ..errors import BackendUnavailable, QKGenValueError

CPU_BACKENDS = ("opencl", "sycl")


@functools.lru_cache(maxsize=None)
def cpu_device(backend: str | None = None, device=None) -> tuple[str, int]:
    """(backend, device index) that runs CPU tensors: the given ones, else the first CPU device."""
    from .. import backends

    env = os.environ.get("QKGEN_BACKEND")
    order = [backend] if backend else ([env] if env in CPU_BACKENDS else list(CPU_BACKENDS))
    reasons = []
    for name in order:
        b = backends.get(name)
        why = b.why_unavailable()
        if why:
            reasons.append(f"{name}: {why}")
            continue
        if device is not None:
            return name, b.resolve(device).index
        cpus = sorted((d for d in b.devices() if d.kind == "cpu"), key=lambda d: "pocl" in d.aliases)
        if cpus:
            return name, cpus[0].index
        reasons.append(f"{name}: no CPU device")
    raise BackendUnavailable(f"no OpenCL or SYCL CPU device runs CPU tensors ({'; '.join(reasons)})")


def placement(t: torch.Tensor, backend: str | None = None, device=None) -> tuple[str, int]:
    """(backend, device index) for a tensor's device."""
    kind = t.device.type
    if kind == "cuda":
        return "cuda", t.device.index if t.device.index is not None else torch.cuda.current_device()
    if kind == "xpu":
        return "sycl", t.device.index or 0
    if kind == "cpu":
        return cpu_device(backend, device)
    raise QKGenValueError(f"x.device: {t.device}; allowed: cpu, cuda, xpu")


def to_host(t: torch.Tensor) -> np.ndarray:
    """A numpy view/copy of a CPU tensor in qkgen's host form (bf16 as uint16 bits)."""
    t = t.detach().contiguous()
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def from_host(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    out = torch.from_numpy(np.ascontiguousarray(a))
    return out.view(torch.bfloat16) if dtype == torch.bfloat16 else out


FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def check_x(x, k: int, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor):
        raise QKGenValueError(f"{name}: {type(x).__name__}; allowed: a torch.Tensor")
    if x.dtype not in FLOATS:
        raise QKGenValueError(f"{name}.dtype: {x.dtype}; allowed: torch.float32, torch.float16, torch.bfloat16")
    if x.dim() < 1 or x.shape[-1] != k:
        raise QKGenValueError(f"{name}.shape: {list(x.shape)}; allowed: [..., {k}]")
    if x.device.type not in ("cpu", "cuda", "xpu"):
        raise QKGenValueError(f"{name}.device: {x.device}; allowed: cpu, cuda, xpu")
