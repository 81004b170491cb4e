"""gemv_mma by the byte-pair table (pairs=True on a row of two codes a byte: nf4, fp4, int4): each
code byte's two values read unscaled from a 256-entry table of the product type, a piece of columns
under one scale multiplied by warp fragments, then scaled once in f32. On Intel's CPU OpenCL, where
the product goes through local memory: rows with block, tensor, row and group scales, pieces of 32,
64 and 128 columns, f16, bf16 and f32 x, M = 1, 3 and 8, 67 rows (rows past N), K with a step past
the last whole one, rounds and tiles, poisoned outputs; within gemv_error's pair-table model, and
outside the rounded-weight model where that differs. Then the rule for which weights it takes, the
runtime's choice of it on CUDA (the catalog's K of 96 keeps the float decode), and the CUDA sources
built by nvcc for every arch of the compile matrix where there is one. The PTX form runs in the GPU
suite (tests/gpu/test_gemv_mma_gpu.py)."""

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.backends import get
from qkgen.backends.cuda_toolchain import find_nvcc
from qkgen.formats import reference
from qkgen.kernels.ops.mma import pair_table_fits
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.runtime import api
from qkgen.runtime.paths import mma_knobs
from qkgen.runtime.plan import Plan
from qkgen.tools import check

from .test_cuda_compile import ARCHES, assert_build_without_warnings
from .test_generated_source import assert_read_well

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

opencl = get("opencl")
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")

# (format, variant, dtype, M, K, knobs): K = 320 is two whole steps of 128 and a step of 64 columns
CASES = [
    ("nf4", {"nested": True, "blocksize": 64}, "f16", 1, 320, {}),
    ("nf4", {"blocksize": 64}, "bf16", 8, 192, {}),
    ("fp4", {"nested": True, "blocksize": 64}, "f32", 3, 320, {"rounds": 2}),
    ("nf4", {"blocksize": 32}, "f16", 3, 320, {}),
    ("nf4", {"blocksize": 128}, "bf16", 1, 384, {"tiles": 2, "wg": 128}),
    ("int4", {"scale_mode": "row"}, "f16", 8, 320, {"rounds": 3}),
    ("int4", {"scale_mode": "tensor"}, "bf16", 3, 192, {}),
    ("int4", {"scale_mode": "group", "blocksize": 64}, "f32", 1, 320, {}),
    ("int4", {"scale_mode": "group", "blocksize": 32}, "f16", 8, 192, {"rounds": 2, "tiles": 2, "wg": 64}),
]


def _id(case) -> str:
    name, kw, dtype, m, k, knobs = case
    return "-".join([name, *map(str, kw.values()), dtype, f"m{m}", f"k{k}", *(f"{a}{b}" for a, b in knobs.items())])


def _launch(qt, x, dtype, **knobs) -> tuple[np.ndarray, str]:
    """y [M, N] as the host gets it from one launch of gemv_mma with pairs on the first OpenCL
    device, and the kernel's source."""
    dev = qkgen.backends.open_device("opencl", opencl.devices()[0].name)
    plan = Plan.make(dev, "gemv_mma", qt.format, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                     scale_mode=qt.scale_mode, pairs=True, **knobs)  # fmt: skip
    (n, k), m = qt.shape, x.shape[0]
    _, sizes = api.weight_values(qt)
    sizes.update(N=n, K=k, M=m)
    (buf, arr, _), = plan.outputs(sizes).values()
    plan.launch({**qt.arrays(), "x": x, "y": buf}, sizes)
    return dev.download(arr, dtype, m * n).reshape(m, n), plan.ks.source  # bf16: its bits, as gemv_error takes


@needs_opencl
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_pair_table_matches_its_model(case, rng, poisoned):
    name, kw, dtype, m, k, knobs = case
    qt = reference.quantize(rng.standard_normal((67, k)).astype(np.float32), F.get(name), **kw)
    x = check.gemv_x(rng, m, k, dtype)
    y, source = _launch(qt, x, dtype, **knobs)
    assert "pairs[t] = " in source and "lut[" not in source
    err, bound = check.gemv_error(y, x, qt, dtype, rounded=True, pair_table=True)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} outside the bound"
    if name != "int4":  # a table row's values rounded before their scale: not the rounded weights' y
        err, bound = check.gemv_error(y, x, qt, dtype, rounded=True)
        assert (err > 0).any()


@needs_opencl
def test_pair_table_model_fails_swapped_nibbles(rng, poisoned):
    """The model's bound catches a table whose two values of a byte are swapped."""
    qt = reference.quantize(rng.standard_normal((40, 192)).astype(np.float32), "nf4", blocksize=64)
    x = check.gemv_x(rng, 2, 192, "f16")
    y, _ = _launch(qt, x, "f16")
    err, bound = check.gemv_error(y, x, qt, "f16", rounded=True, pair_table=True)
    assert not (err > bound).any()
    swapped = qt.with_arrays(data=np.asarray(qt.data) >> 4 | (np.asarray(qt.data) & 15) << 4)
    err, bound = check.gemv_error(y, x, swapped, "f16", rounded=True, pair_table=True)
    assert (err > bound).any()


def test_which_weights_it_takes():
    nf4, int4 = F.get("nf4"), F.get("int4")
    # blocks across rows: K in whole pieces of min(blocksize, 128) columns
    assert pair_table_fits(nf4, 64, None, 192) and not pair_table_fits(nf4, 64, None, 96)
    assert pair_table_fits(nf4, 256, None, 384) and not pair_table_fits(nf4, 256, None, 320)
    # rows and groups of their own: whole chunks of 32
    assert pair_table_fits(int4, 64, "row", 96) and pair_table_fits(int4, 32, "group", 96)
    assert not pair_table_fits(F.get("q4_0"), 32, None, 128) and not pair_table_fits(F.get("blockwise8"), 256, None, 256)


def test_cuda_takes_it_where_the_weight_allows(rng):
    cuda, ocl = PROFILES["cuda-sm90"], PROFILES["opencl-nvidia-sm90"]
    nf4 = F.get("nf4")
    assert mma_knobs(cuda, nf4, 8, "f16", (64, None, 14336)) == {"pairs": True}
    assert mma_knobs(cuda, nf4, 8, "f16", (64, None, 96)) == {} == mma_knobs(ocl, nf4, 8, "f16", (64, None, 14336))
    # one tile with the table (32 KB and two tiles' sums pass 48 KB), two without it
    assert mma_knobs(cuda, nf4, 8, "f32", (64, None, 14336)) == {"pairs": True}
    assert mma_knobs(cuda, nf4, 8, "f32", (64, None, 96)) == {"tiles": 2}
    with pytest.raises(qkgen.QKGenValueError, match="tiles: 2 with wg 512 and pairs: True needs .* allowed: at most 49152"):
        render("gemv_mma", "nf4", cuda, dtype="f32", blocksize=64, nested=True, pairs=True, tiles=2)
    assert mma_knobs(cuda, F.get("int8"), 8, "f16", (64, "row", 14336)) == {}
    ks = render("gemv_mma", "nf4", cuda, dtype="bf16", blocksize=64, nested=True, pairs=True)
    assert ks.name == "gemv_mma_nf4_nested_bs64_bf16_pairs1" and ks.param("k_multiple") == 64
    assert "k_multiple=64" in ks.source.split("*/", 1)[0]


@pytest.mark.skipif(find_nvcc() is None, reason="no nvcc on this machine")
@pytest.mark.parametrize("name, kw, dtype", [("nf4", {"nested": True, "blocksize": 64}, "bf16"),
                                             ("int4", {"scale_mode": "group", "blocksize": 32}, "f32"),
                                             ("int4", {"scale_mode": "row"}, "f16")])
def test_cuda_sources_build_and_read_well(name, kw, dtype):
    ks = render("gemv_mma", name, "cuda-sm80", dtype=dtype, pairs=True, **kw)  # every arch's source (test_cuda_compile)
    assert "mma.sync.aligned.m16n8k16" in ks.source and "frag[" not in ks.source
    assert_read_well("cuda-sm80", [ks])
    for arch in ARCHES:
        assert_build_without_warnings([ks], arch)
