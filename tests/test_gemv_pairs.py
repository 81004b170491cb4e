"""The M = 1 float GEMV by byte pairs (pairs=True: each code byte's two values read from a 256-entry
table of x's 16-bit type, a copy a lane, and multiplied with x's pair there) on Intel's CPU OpenCL and
SYCL, which have f16 arithmetic: nf4 (nested, plain), fp4 and int4 (row and group scales), 67 rows
(rows past N), K with a tail step, CUDA's knobs and the op's defaults, within gemv_error's pairs
bound; poisoned outputs. The public path="pairs" call, the refusals, `qkgen check`, and the CUDA
sources (built by nvcc for every arch of the compile matrix where there is one)."""

import dataclasses

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.backends.cuda_toolchain import find_nvcc
from qkgen.errors import QKGenValueError
from qkgen.formats import reference
from qkgen.kernels.ops.gemv import pairs_apply
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.runtime import api
from qkgen.tools import check

from .test_cuda_compile import ARCHES, assert_build_without_warnings
from .test_gemv_stage_x import _case, _device, _run, devices  # noqa: F401 (a fixture)
from .test_generated_source import assert_read_well

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

ROWS = [("nf4", {"nested": True, "blocksize": 64}), ("nf4", {"blocksize": 64}), ("fp4", {"blocksize": 128}),
        ("int4", {"scale_mode": "row"}), ("int4", {"scale_mode": "group", "blocksize": 64})]
KNOBS = [{}, {"rpw": 4, "slices": 2, "wg": 256}, {"rpw": 8, "slices": 2}, {"rpw": 4, "slices": 1, "wg": 256}, {}]
# Each row with one knob set, the rows taking the two targets in turn (SYCL's builds are slow)
CASES = [pytest.param(where, name, kw, knobs, id=f"{where}-{name}-{'-'.join(map(str, kw.values()))}-{i}")
         for (name, kw), (i, knobs), where in zip(ROWS, enumerate(KNOBS), ("opencl", "sycl") * 3)]  # fmt: skip


def _assert_pairs_close(y, x, qt, dtype):
    err, bound = check.gemv_error(y, x, qt, dtype, pairs=True)
    bad = err > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} outside the pairs bound; worst {np.max(err - bound)}"
    return err


@pytest.mark.parametrize("where, name, kw, knobs", CASES)
def test_pairs_match_reference(where, name, kw, knobs, devices, rng, poisoned):
    dev, ks, qt, x = _case(devices, where, name, kw, "f16", 1, 1, rng, stage=False, pairs=True, **knobs)
    assert ks.param("pairs") and "pairs1" in ks.name and "qk_hfma2(" in ks.source
    copies = min(ks.param("lanes"), 32)
    # a copy a lane: declared in the body, or (SYCL) a local-memory argument
    assert f"uint pairs[{256 * copies}];" in ks.source or [a.count for a in ks.args if a.name == "pairs"] == [256 * copies]
    y = _run(dev, ks, qt, x, 1)
    err = _assert_pairs_close(y, x, qt, "f16")
    # not the float path's sums: the 16-bit products show (a kernel that ignored pairs would pass
    # the bound too, but give the float path's y)
    t = _device(devices, where)[1]
    float_ks = render("gemv", name, t, dtype="f16", blocksize=kw.get("blocksize"), nested=kw.get("nested", False),
                      scale_mode=kw.get("scale_mode"), mmax=1, **knobs)  # fmt: skip
    plain = _run(dev, float_ks, qt, x, 1)
    assert not np.array_equal(y, plain)
    assert err.max() > 0


def test_pairs_bound_fails_a_wrong_table(devices, rng, poisoned):
    """The bound is tight enough to catch the two values of a byte swapped in the table."""
    dev, ks, qt, x = _case(devices, "opencl", "nf4", {"blocksize": 64}, "f16", 1, 1, rng, stage=False, pairs=True)

    swapped = ks.source.replace("TABLE[b >> 4]", "TABLE[@]").replace("TABLE[b & 15u]", "TABLE[b >> 4]")
    swapped = swapped.replace("TABLE[@]", "TABLE[b & 15u]")
    assert swapped != ks.source
    y = _run(dev, dataclasses.replace(ks, source=swapped), qt, x, 1)
    err, bound = check.gemv_error(y, x, qt, "f16", pairs=True)
    assert (err > bound).any()


def test_pairs_public_call(rng):
    fmt = F.get("nf4")
    qt = reference.quantize(rng.standard_normal((40, 512)).astype(np.float32), fmt, nested=True, blocksize=64)
    x = check.gemv_x(rng, 1, 512, "f16")
    y = api.gemv(qt, x, path="pairs", backend="opencl")
    _assert_pairs_close(y, x, qt, "f16")
    plans, _ = api.gemv_plans(qt, x, "pairs", "opencl")
    assert [p.ks.param("pairs") for p in plans] == [True]


@pytest.mark.parametrize("name, kw, dtype, m, why", [
    ("q4_0", {}, "f16", 1, "(nf4, fp4, int4)"),
    ("nf4", {"blocksize": 64}, "f32", 1, "f16 x"),
    ("nf4", {"blocksize": 64}, "f16", 2, "M = 2 on"),
    ("nf4", {"blocksize": 64}, "bf16", 1, "bf16 x where it"),  # Intel's CPU OpenCL: no bf16 arithmetic
])  # fmt: skip
def test_pairs_path_refused(name, kw, dtype, m, why, rng):
    qt = reference.quantize(rng.standard_normal((8, 256)).astype(np.float32), F.get(name), **kw)
    x = check.gemv_x(rng, m, 256, dtype)
    with pytest.raises(QKGenValueError, match="path: 'pairs'") as e:
        api.gemv(qt, x, path="pairs", backend="opencl")
    assert why in str(e.value)


@pytest.mark.parametrize("target, name, dtype, params", [
    ("cuda-sm90", "q4_0", "f16", {}),
    ("cuda-sm90", "nf4", "f16", {"mmax": 8}),
    ("opencl-nvidia", "nf4", "f16", {}),  # no f16 arithmetic
    ("sycl-intel-gpu", "nf4", "bf16", {}),
    ("cuda-sm90", "nf4", "f16", {"stage_x": True}),
])  # fmt: skip
def test_pairs_render_refused(target, name, dtype, params):
    with pytest.raises(QKGenValueError, match="pairs|stage_x"):
        render("gemv", name, target, dtype=dtype, blocksize=64 if name == "nf4" else None, pairs=True,
               **{"mmax": 1, **params})  # fmt: skip


def test_pairs_apply():
    t = PROFILES["cuda-sm90"]
    assert pairs_apply(F.get("nf4"), "bf16", t) and pairs_apply(F.get("fp4"), "f16", t)
    assert not pairs_apply(F.get("nf4"), "bf16", t, m=2)
    assert pairs_apply(F.get("int4"), "f16", t)  # integer codes: their values in the pair table
    assert not pairs_apply(F.get("blockwise8"), "f16", t) and not pairs_apply(F.get("int8"), "f16", t)  # a code a byte
    assert not pairs_apply(F.get("q4_0"), "f16", t) and not pairs_apply(F.get("q4_1"), "f16", t)  # inline blocks
    assert not pairs_apply(F.get("mxfp4"), "f16", t)  # split-packed
    assert not pairs_apply(F.get("nf4"), "bf16", PROFILES["opencl-intel-gpu"])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_pairs_cuda_source(dtype):
    ks = render("gemv", "nf4", "cuda-sm90", dtype=dtype, blocksize=64, nested=True, mmax=1, pairs=True, rpw=4,
                slices=2, wg=256)  # fmt: skip
    pair = "qk_bfma2" if dtype == "bf16" else "qk_hfma2"
    assert ks.source.count(pair + "(*") == 3 and "__shared__ uint pairs[8192];" in ks.source
    assert "wv << 7 & 0x7f80u | lane4" in ks.source  # byte 0's entry of lane copy lane4 / 4
    assert_read_well("cuda-sm90", [ks])
    if find_nvcc():  # every architecture of the compile matrix (bf16 pairs: sm_80 on, as all of them)
        for arch in ARCHES:
            assert_build_without_warnings([ks], arch)


def test_qkgen_check_covers_pairs(monkeypatch):
    """`qkgen check`'s float GEMV check runs the pairs path too where the device takes it (f16 x on
    Intel's CPU OpenCL), not where it does not (bf16 x there)."""
    calls = []
    gemv = api.gemv
    monkeypatch.setattr(api, "gemv", lambda *a, **k: (calls.append(k.get("path")), gemv(*a, **k))[1])
    v = {"op": "gemv", "format": "nf4", "dtype": "f16", "blocksize": 64, "nested": True, "mmax": 1}
    ok, err = check._check_gemv(v, F.get("nf4"), np.random.default_rng(0), "opencl", None)
    assert ok and err > 0 and calls == ["float", "pairs"]
    calls.clear()
    ok, _ = check._check_gemv({**v, "dtype": "bf16"}, F.get("nf4"), np.random.default_rng(0), "opencl", None)
    assert ok and calls == ["float"]
