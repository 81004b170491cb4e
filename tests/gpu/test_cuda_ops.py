"""GEMV (float path and int8-dot path) and quantize_q8_1 on the CUDA GPU, with numpy and torch
inputs. quantize_q8_1 must equal the reference bytes; GEMV must stay within the f32 accumulation
bound of the float64 product (as tests/test_gemv.py does on OpenCL), int8dot within an NMSE."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
from gpucases import int8dot_k, int8dot_within_bound, sample, torch_host
from qkgen.formats import reference
from qkgen.tools import catalog
from qkgen import formats as F
from qkgen.runtime.api import quantize_q8_1_device
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render

INT8DOT_FORMATS = get_op("gemv_int8dot").formats()

pytestmark = pytest.mark.gpu
EPS = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8}  # half an ulp of the output, relative
N_ROWS = 67  # not a multiple of the rows per work-group


def x_host(rng, m: int, k: int, dtype: str) -> np.ndarray:
    x = rng.standard_normal((m, k)).astype(np.float32)
    return x.astype(np.float16) if dtype == "f16" else reference.round_to(x, "bf16") if dtype == "bf16" else x


def f64(a: np.ndarray, dtype: str) -> np.ndarray:
    return (reference.bf16_to_f32(a) if dtype == "bf16" else np.asarray(a, np.float32)).astype(np.float64)


def weight(v: dict, k_chunks: int = 3):
    ept = render("gemv", v["format"], "cuda", blocksize=v.get("blocksize"), nested=v.get("nested", False),
                 scale_mode=v.get("scale_mode")).param("ept")  # fmt: skip
    fmt = F.get(v["format"])
    k = k_chunks * max(ept, fmt.block if fmt.inline else 1)
    return sample(fmt.name, (N_ROWS, k), bool(v.get("nested")), v.get("scale_mode"), v.get("blocksize"))


def assert_close(y, x, qt, dtype):
    w = reference.dequantize(qt).astype(np.float64)
    xf = f64(x, dtype)
    ref = xf @ w.T
    bound = w.shape[1] * 2.0**-24 * (np.abs(xf) @ np.abs(w).T) * 2 + EPS[dtype] * np.abs(ref) + 1e-30
    err = np.abs(f64(y, dtype) - ref)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} outside the bound"


GEMV = list(catalog.variants("gemv"))


@pytest.fixture(scope="module", autouse=True)
def compiled(cuda_device):
    """The GEMV kernels (M = 1 and M <= 8 forms) built up front by parallel nvcc runs."""
    # the catalog's GEMV variants name their mmax (the M = 1 and M <= 8 forms) themselves
    kss = [render("gemv", v["format"], cuda_device.target,
                  **{k: x for k, x in v.items() if k not in ("op", "format")}) for v in GEMV]  # fmt: skip
    cuda_device.compile_many(kss)


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize(
    "v", GEMV, ids=lambda v: "-".join(str(x) for k, x in v.items() if k != "op" and x not in (None, False))
)
def test_gemv_float_path(v, m, cuda_device):
    qt = weight(v)
    x = x_host(np.random.default_rng(m), m, qt.shape[1], v["dtype"])
    y = qkgen.gemv(qt, x, path="float", backend="cuda", device=0)
    assert y.shape == (m, N_ROWS)
    assert_close(y, x, qt, v["dtype"])


PAIRS = [(name, kw, dtype, knobs) for name, kw in (("nf4", {"nested": True, "blocksize": 64}), ("nf4", {"blocksize": 64}),
                                                  ("fp4", {"nested": True, "blocksize": 128}),
                                                  ("int4", {"scale_mode": "row"}),
                                                  ("int4", {"scale_mode": "group", "blocksize": 64}))
         for dtype in ("f16", "bf16") for knobs in ({}, {"rpw": 4, "slices": 2, "wg": 256}, {"rpw": 8, "slices": 2})]


@pytest.mark.parametrize("name, kw, dtype, knobs", PAIRS, ids=lambda v: str(v))
def test_gemv_pairs(name, kw, dtype, knobs, cuda_device):
    """pairs (the M = 1 float GEMV by byte pairs) on CUDA, within its 16-bit bound; 67 rows, K of a
    step and a tail; outputs poisoned."""
    from qkgen.runtime import plan as plan_mod
    from qkgen.runtime.api import weight_values
    from qkgen.tools.check import gemv_error

    ks = render("gemv", name, cuda_device.target, dtype=dtype, mmax=1, pairs=True, **kw, **knobs)
    step = ks.param("lanes") * ks.param("slices") * ks.param("ept")
    k = step + 2 * max(ks.param("ept"), kw.get("blocksize") or 1)
    qt = sample(name, (N_ROWS, k), kw.get("nested", False), kw.get("scale_mode"), kw.get("blocksize"))
    x = x_host(np.random.default_rng(5), 1, k, dtype)
    before, plan_mod.POISON_OUTPUTS = plan_mod.POISON_OUTPUTS, True
    try:
        p = plan_mod.Plan(cuda_device, ks)
        arrays, sizes = weight_values(qt)
        sizes.update(N=N_ROWS, K=k, M=1)
        ((ybuf, yarr, dt),) = p.outputs(sizes).values()
        p.launch({**arrays, "x": x, "y": ybuf}, sizes)
        y = cuda_device.download(yarr, dt, N_ROWS).reshape(1, N_ROWS)
    finally:
        plan_mod.POISON_OUTPUTS = before
    err, bound = gemv_error(y, x, qt, dtype, pairs=True)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} outside the pairs bound"
    y_public = qkgen.gemv(qt, x, path="pairs", backend="cuda", device=0)
    err, bound = gemv_error(y_public, x, qt, dtype, pairs=True)
    assert not (err > bound).any()


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_gemv_torch_in_torch_out(dtype, torch_cuda):
    torch = torch_cuda
    v = {"format": "nf4", "dtype": dtype, "nested": True}
    qt = weight(v)
    x = x_host(np.random.default_rng(1), 3, qt.shape[1], dtype)
    xt = torch.from_numpy(x).cuda(0)
    if dtype == "bf16":
        xt = xt.view(torch.bfloat16)
    qt_t = qt.with_arrays(
        **{k: torch.from_numpy(np.ascontiguousarray(a)).cuda(0) for k, a in qt.arrays().items()}
    )
    y = qkgen.gemv(qt_t, xt, path="float", backend="cuda", device=0)
    assert isinstance(y, torch.Tensor) and y.dtype == xt.dtype and tuple(y.shape) == (3, N_ROWS)
    assert_close(torch_host(y, dtype), x, qt, dtype)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("m, k", [(1, 32), (3, 96), (5, 4096 + 32)])
def test_quantize_q8_1_bytes_equal_reference(m, k, dtype, cuda_device):
    x = x_host(np.random.default_rng(k), m, k, dtype)
    got = quantize_q8_1_device(x, backend="cuda", device=0)
    want = reference.quantize(f64(x, dtype).astype(np.float32), "q8_1").data
    assert got.dtype == np.uint8 and np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("fmt", INT8DOT_FORMATS)
def test_gemv_int8dot_close_to_float_product(fmt, dtype, cuda_device):
    qt = sample(fmt, (N_ROWS, int8dot_k(fmt)))  # K-quants: whole super-blocks
    x = x_host(np.random.default_rng(7), 3, qt.shape[1], dtype)
    y = qkgen.gemv(qt, x, path="int8dot", backend="cuda", device=0)
    ref = f64(x, dtype) @ reference.dequantize(qt).astype(np.float64).T
    got = f64(y, dtype)
    assert float(((got - ref) ** 2).sum() / (ref**2).sum()) < 1e-3
    ok, worst = int8dot_within_bound(got, qt, f64(x, dtype).astype(np.float32), EPS[dtype])
    assert ok, f"outside the f32 bound of int8dot_terms: worst {worst}x"
