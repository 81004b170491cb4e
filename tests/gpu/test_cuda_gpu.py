"""The CUDA backend on a real GPU: every dequantize kernel against the reference codec, with numpy,
torch, pycuda and __cuda_array_interface__ inputs; torch streams; the disk cache; bad inputs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import qkgen
from gpucases import assert_same, dequantize_cases, sample, sample_for, to_device, torch_host
from qkgen.runtime import api
from qkgen.tools import catalog
from qkgen.errors import QKGenValueError
from qkgen.kernels.render import render

pytestmark = pytest.mark.gpu
TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


@pytest.fixture(scope="module", autouse=True)
def compiled(cuda_device):
    """Every dequantize kernel built up front: the nvcc runs go in parallel, one per CPU."""
    kss = [render(v.pop("op"), v.pop("format"), cuda_device.target, **v)
           for v in catalog.variants("dequantize")]  # fmt: skip
    cuda_device.compile_many(kss)


def dequantize(qt, dtype):
    return qkgen.dequantize(qt, dtype, backend="cuda", device=0)


def test_device_info(cuda_device):
    info = cuda_device.info
    assert info.kind == "gpu" and info.backend == "cuda"
    t = cuda_device.target
    assert t is info.target and t.backend == "cuda" and t.name == f"cuda:{info.name}"
    assert t.subgroup_size == 32 and t.dot4 and t.arch == cuda_device.arch and t.arch.startswith("sm_")
    print(info.line(), cuda_device.identity())


@pytest.mark.parametrize("v,shape", dequantize_cases())
def test_dequantize_numpy(v, shape):
    qt = sample_for(v, shape)
    out = dequantize(qt, v["dtype"])
    assert isinstance(out, np.ndarray)
    assert_same(out, qt, v["dtype"])


@pytest.mark.parametrize("v,shape", dequantize_cases())
def test_dequantize_torch_zero_copy(v, shape, torch_cuda):
    torch = torch_cuda
    qt = to_device(sample_for(v, shape), lambda a: torch.from_numpy(a).cuda(0))
    out = dequantize(qt, v["dtype"])
    assert isinstance(out, torch.Tensor) and out.device == qt.data.device
    assert out.dtype == getattr(torch, TORCH_DTYPES[v["dtype"]]) and tuple(out.shape) == qt.shape
    assert_same(torch_host(out, v["dtype"]), sample_for(v, shape), v["dtype"])


SOME = [v for v in catalog.variants("dequantize") if v["dtype"] == "bf16"]


@pytest.mark.parametrize(
    "v", SOME, ids=lambda v: f"{v['format']}-{v.get('nested') or v.get('scale_mode') or ''}"
)
def test_dequantize_gpuarray(v, cuda_device):
    drv = pytest.importorskip("pycuda.driver")
    gpuarray = pytest.importorskip("pycuda.gpuarray")
    qt0 = sample_for(v, (7, 1024))  # whole blocks of every family (K-quants: 256)
    ctx = drv.Device(0).retain_primary_context()  # pycuda memory in the context torch also uses
    ctx.push()
    try:
        qt = to_device(qt0, gpuarray.to_gpu)
        out = dequantize(qt, "bf16")
        assert isinstance(out, gpuarray.GPUArray) and out.shape == qt.shape
        assert_same(out.get(), qt0, "bf16")
    finally:
        drv.Context.pop()


@pytest.mark.parametrize(
    "v", SOME, ids=lambda v: f"{v['format']}-{v.get('nested') or v.get('scale_mode') or ''}"
)
def test_dequantize_cuda_array_interface(v, cuda_device):
    cupy = pytest.importorskip("cupy")
    qt0 = sample_for(v, (7, 1024))  # whole blocks of every family (K-quants: 256)
    with cupy.cuda.Device(0):
        qt = to_device(qt0, cupy.asarray)
        out = dequantize(qt, "bf16")
    assert_same(cupy.asarray(out).get(), qt0, "bf16")


@pytest.mark.parametrize("fmt", ["nf4", "q4_1", "int4"])
def test_ordered_on_torch_current_stream(fmt, torch_cuda):
    """Inputs written on a busy side stream, then dequantized: only a launch on that stream (not on
    the legacy default stream) sees them written."""
    torch = torch_cuda
    qt0 = sample(fmt, (257, 1056), scale_mode="group" if fmt == "int4" else None)
    host = {k: torch.from_numpy(np.ascontiguousarray(a)).pin_memory() for k, a in qt0.arrays().items()}
    side = torch.cuda.Stream(0)
    with torch.cuda.stream(side):
        dev = {
            k: torch.full_like(h, 0xFF if h.dtype == torch.uint8 else float("nan"), device=0)
            for k, h in host.items()
        }
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the inputs are written
        for k, h in host.items():
            dev[k].copy_(h, non_blocking=True)
        out = dequantize(qt0.with_arrays(**dev), "f16")
    side.synchronize()
    assert_same(torch_host(out, "f16"), qt0, "f16")


def test_torch_data_with_numpy_statistics_on_a_side_stream(torch_cuda):
    torch = torch_cuda
    qt0 = sample("nf4", (129, 1031), nested=True)
    side = torch.cuda.Stream(0)
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)
        qt = qt0.with_arrays(data=torch.from_numpy(qt0.data).cuda(0))
        out = dequantize(qt, "bf16")
    side.synchronize()
    assert_same(torch_host(out, "bf16"), qt0, "bf16")


def test_large_tensor(torch_cuda):
    torch = torch_cuda
    qt0 = sample("nf4", (2048, 8192 + 64))
    out = dequantize(to_device(qt0, lambda a: torch.from_numpy(a).cuda(0)), "bf16")
    assert_same(torch_host(out, "bf16"), qt0, "bf16")


def test_time_ms(cuda_device):
    qt = sample("q4_0", (1024, 4096))
    plan = api.dequantize_plan(qt, "f16", backend="cuda", device=0)
    arrays, sizes = api.weight_values(qt)
    (buf, _, _), = plan.outputs(sizes).values()
    ms = plan.dev.time_ms(plan.kernel, plan.bind({**arrays, "out": buf}, sizes), *plan.geometry(sizes))
    assert 0.0 < ms < 1000.0


def test_benchmark_facts(cuda_device):
    res = cuda_device.copy_ceiling(256 << 20, iters=5, warmup=2)
    assert 100 < res["gbps"] < 20000 and res["buffer_bytes"] == 256 << 20, res
    assert cuda_device.l2_bytes() > 1 << 20


def test_second_process_loads_the_cached_cubin(tmp_path):
    script = textwrap.dedent("""
        import sys
        import numpy as np
        import qkgen, qkgen.backends.cuda as cuda
        if sys.argv[1] == "forbid":
            def refuse(*a, **k):
                raise AssertionError("nvcc ran although the cubin is cached")
            cuda.nvcc_compile = refuse
        qt = qkgen.quantize(np.linspace(-1, 1, 4096, dtype=np.float32), "q5_1")
        print(float(np.asarray(qkgen.dequantize(qt, "f32", backend="cuda")).sum()))
    """)
    env = {**os.environ, "QKGEN_CACHE_DIR": str(tmp_path)}
    first = subprocess.run(
        [sys.executable, "-c", script, "build"], env=env, capture_output=True, text=True, check=False
    )
    assert first.returncode == 0, first.stderr
    assert list(tmp_path.rglob("*.cubin")), "no cubin was cached"
    second = subprocess.run(
        [sys.executable, "-c", script, "forbid"], env=env, capture_output=True, text=True, check=False
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


# ---- bad input: a clear QKGenValueError before launch, never a device fault ----


def nf4_on_gpu(torch):
    qt0 = sample("nf4", (64, 256))
    return qt0, to_device(qt0, lambda a: torch.from_numpy(a).cuda(0))


def test_cpu_tensor_is_refused(torch_cuda):
    torch = torch_cuda
    qt0, qt = nf4_on_gpu(torch)
    with pytest.raises(QKGenValueError, match=r"data: torch tensor is on cpu.*\.cuda\(0\).*\.numpy\(\)"):
        dequantize(qt.with_arrays(data=torch.from_numpy(qt0.data)), "f32")
    with pytest.raises(QKGenValueError, match="absmax: torch tensor is on cpu"):
        dequantize(qt.with_arrays(absmax=torch.from_numpy(qt0.absmax)), "f32")


def test_misaligned_tensor_is_refused(torch_cuda):
    torch = torch_cuda
    qt0, qt = nf4_on_gpu(torch)
    buf = torch.empty(qt0.data.nbytes + 16, dtype=torch.uint8, device=0)
    shifted = buf[1 : 1 + qt0.data.nbytes]
    shifted.copy_(qt.data)
    with pytest.raises(QKGenValueError, match="data: misaligned"):
        dequantize(qt.with_arrays(data=shifted), "f32")


def test_non_contiguous_tensor_is_refused(torch_cuda):
    torch = torch_cuda
    qt0, qt = nf4_on_gpu(torch)
    strided = torch.empty(2 * qt0.data.size, dtype=torch.uint8, device=0)[::2]
    strided.copy_(qt.data)
    with pytest.raises(QKGenValueError, match="data: array is not contiguous"):
        dequantize(qt.with_arrays(data=strided), "f32")


def test_wrong_dtype_is_refused(torch_cuda, cuda_device):
    torch = torch_cuda
    _, qt = nf4_on_gpu(torch)
    with pytest.raises(QKGenValueError, match="absmax: dtype float16"):
        dequantize(qt.with_arrays(absmax=qt.absmax.half()), "f32")
    with pytest.raises(QKGenValueError, match="absmax: dtype float16; allowed: float32"):
        cuda_device.as_input(torch.zeros(16, dtype=torch.float16, device=0), "absmax", ("float32",))


def test_misaligned_gpuarray_is_refused(cuda_device):
    drv = pytest.importorskip("pycuda.driver")
    gpuarray = pytest.importorskip("pycuda.gpuarray")
    ctx = drv.Device(0).retain_primary_context()
    ctx.push()
    try:
        arr = gpuarray.to_gpu(np.zeros(64, np.uint8))[1:33]
        with pytest.raises(QKGenValueError, match="data: misaligned"):
            cuda_device.as_input(arr, "data", ("uint8",))
    finally:
        drv.Context.pop()


def test_tensor_on_another_gpu_is_refused(torch_cuda):
    torch = torch_cuda
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    _, qt = nf4_on_gpu(torch)
    with pytest.raises(QKGenValueError, match="on another GPU"):
        dequantize(qt.with_arrays(absmax=qt.absmax.to(1)), "f32")


def test_device_still_healthy_after_refusals(torch_cuda, cuda_device):
    torch = torch_cuda
    qt0, qt = nf4_on_gpu(torch)
    assert_same(torch_host(dequantize(qt, "bf16"), "bf16"), qt0, "bf16")
    cuda_device.synchronize()
