"""The float GEMV with prefetch (the next chunk's codes and scales loaded before this chunk's are
decoded) on Intel's CPU OpenCL, SYCL, and OpenCL rendered without sub-groups: every row the float
path takes (inline blocks, separate statistics, nested, super-blocks with high bits and slots),
M = 1 and M > 1 (x read from global memory: prefetch and stage_x exclude each other), within the f32
bound of the float64 product; K with a tail step, so some lanes have no next chunk; poisoned outputs."""

import pytest

from qkgen.backends.cuda_toolchain import find_nvcc
from qkgen.errors import QKGenValueError
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES, get_target

from .matrix import spread
from .test_cuda_compile import assert_build_without_warnings
from .test_gemv_stage_x import TARGETS, _assert_close, _case, _run, devices  # noqa: F401 (a fixture)
from .test_generated_source import assert_read_well

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

KW = {"nf4": {"nested": True, "blocksize": 64}, "fp4": {"blocksize": 64}, "blockwise8": {"blocksize": 256},
      "int8": {"scale_mode": "row"}, "int4": {"scale_mode": "group", "blocksize": 64},
      "int2": {"scale_mode": "row"}, "int1": {"scale_mode": "tensor"}}  # fmt: skip
ROWS = get_op("gemv").formats()


def _off_stage(m: int) -> dict:
    return {"stage_x": False} if m > 1 else {}  # prefetch reads x from global memory


# Each row and (dtype, M tile, M) on one target, the targets taking turns within a row (tests/matrix.py).
PREFETCH_CASES = [pytest.param(where, name, dtype, mmax, m, id=f"{where}-{name}-{dtype}-mmax{mmax}-m{m}")
                  for (name, (dtype, mmax, m)), where in spread(
                      [(n, c) for n in ROWS for c in [("f16", 1, 1), ("f32", 1, 1), ("bf16", 8, 5)]], TARGETS,
                      lambda c: c[0])]  # fmt: skip


@pytest.mark.parametrize("where, name, dtype, mmax, m", PREFETCH_CASES)
def test_prefetch_matches_reference(where, name, dtype, mmax, m, devices, rng, poisoned):
    dev, ks, qt, x = _case(devices, where, name, KW.get(name, {}), dtype, mmax, m, rng, stage=False,
                           prefetch=True, **_off_stage(mmax))  # fmt: skip
    assert ks.param("prefetch") and "prefetch1" in ks.name and "wq_next" in ks.source
    _assert_close(_run(dev, ks, qt, x, m), x, qt, dtype)


def test_prefetch_is_named_and_off_by_default():
    off = render("gemv", "q4_0", "cuda-sm90", dtype="f16")
    on = render("gemv", "q4_0", "cuda-sm90", dtype="f16", prefetch=True)
    assert "wq_next" not in off.source and on.name == off.name + "_prefetch1"
    with pytest.raises(QKGenValueError, match="prefetch: True"):
        render("gemv", "q4_0", "cuda-sm90", dtype="f16", mmax=8, stage_x=True, prefetch=True)


PREFETCH_KERNELS = [render("gemv", f, "cuda-sm90", dtype=d, mmax=m, prefetch=True, **_off_stage(m), **KW.get(f, {}))
                    for f in ROWS for d in ("f32", "bf16") for m in (1, 8)]  # fmt: skip


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_prefetch_sources_read_well(profile):
    kernels = [render("gemv", f, profile, dtype="f16", mmax=m, prefetch=True, **_off_stage(m), **KW.get(f, {}))
               for f in ROWS for m in (1, 8)]  # fmt: skip
    assert_read_well(profile, kernels)


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_prefetch_kernels_compile_for_sm90():
    assert_build_without_warnings(PREFETCH_KERNELS)


def test_cuda_defaults():
    """runtime.paths takes prefetch on CUDA for nf4, fp4 and int4 with f32 x at M = 1 only, and 4 rows a
    lane group in teams of 4 for nf4, fp4 and int8 with 16-bit x at M = 1; gemv_plans renders what it
    says on a CUDA device (a kernel name that says so)."""
    from qkgen import formats as F
    from qkgen.runtime import paths

    cuda, cpu = get_target("cuda-sm90"), get_target("opencl-intel-cpu")
    for f in ("nf4", "fp4", "int4"):
        assert paths.float_knobs(cuda, F.get(f), 1, "f32") == {"prefetch": True}
        assert paths.float_knobs(cuda, F.get(f), 2, "f32") == {}
        assert paths.float_knobs(cpu, F.get(f), 1, "f32") == {}
    for f in ("nf4", "fp4", "int8"):
        for dt in ("f16", "bf16"):
            assert paths.float_knobs(cuda, F.get(f), 1, dt) == {"rpw": 4, "slices": 4}
            assert paths.float_knobs(cuda, F.get(f), 2, dt) == {} == paths.float_knobs(cpu, F.get(f), 1, dt)
    assert paths.float_knobs(cuda, F.get("int4"), 1, "bf16") == {}
    assert paths.float_knobs(cuda, F.get("q8_0"), 1, "f32") == {}
    knobs = paths.float_knobs(cuda, F.get("nf4"), 1, "bf16")
    name = render("gemv", "nf4", cuda, dtype="bf16", nested=True, blocksize=64, **knobs).name
    assert name == "gemv_nf4_nested_bs64_bf16_mmax1_rpw4_slices4"
    knobs = paths.float_knobs(cuda, F.get("nf4"), 1, "f32")
    name = render("gemv", "nf4", cuda, dtype="f32", nested=True, blocksize=64, **knobs).name
    assert name == "gemv_nf4_nested_bs64_f32_mmax1_prefetch1"
