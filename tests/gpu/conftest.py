"""Fixtures of the GPU suite (`python3 -m pytest -m gpu`). Every fixture skips, with the reason,
where its runtime or device is missing, so the suite skips cleanly on a machine without a GPU."""

from __future__ import annotations

import pytest
import qkgen.runtime.plan
from qkgen import backends


def _backend_or_skip(name: str):
    backend = backends.get(name)
    why = backend.why_unavailable()
    if why:
        pytest.skip(f"{name} backend unavailable: {why}")
    return backend


@pytest.fixture(autouse=True)
def poisoned_outputs():
    """Outputs are filled with NaN bytes before every kernel: an unwritten element cannot pass."""
    before, qkgen.runtime.plan.POISON_OUTPUTS = qkgen.runtime.plan.POISON_OUTPUTS, True
    yield
    qkgen.runtime.plan.POISON_OUTPUTS = before


@pytest.fixture(scope="session")
def cuda_device():
    """The first CUDA GPU, opened through the cuda backend (primary context)."""
    _backend_or_skip("cuda")
    return backends.open_device("cuda", 0)


@pytest.fixture(scope="session")
def torch_cuda(cuda_device):
    """torch, with CUDA on the same GPU as cuda_device."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no CUDA")
    return torch


@pytest.fixture(scope="session")
def bnb(torch_cuda):
    """bitsandbytes.functional, with its CUDA library loaded."""
    bnbf = pytest.importorskip("bitsandbytes.functional")
    from bitsandbytes import cextension

    if not getattr(cextension.lib, "compiled_with_cuda", False):
        pytest.skip(f"bitsandbytes has no CUDA library ({type(cextension.lib).__name__})")
    return bnbf


@pytest.fixture(scope="session")
def opencl_nvidia():
    """The NVIDIA GPU through the OpenCL backend (OpenCL C 1.2, no fp16; its warps as sub-groups)."""
    backend = _backend_or_skip("opencl")
    if not any("nvidia" in f"{d.name} {d.platform}".lower() for d in backend.devices()):
        pytest.skip("no NVIDIA OpenCL device: " + "; ".join(d.line() for d in backend.devices()))
    return backends.open_device("opencl", "NVIDIA")
