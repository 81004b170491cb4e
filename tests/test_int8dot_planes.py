"""The planes layout of the int8dot path (issue 11): one plane per field, derived from the row, for
block and super-block rows alike.

formats.layout says where each field of every block sits in the planes; reference.to_planes is its
numpy form. The repack_planes kernel (blocks -> planes on the device) must give to_planes' bytes,
quantize_q8_1 with layout "planes" the reference's q8_1 bytes in planes, and gemv_int8dot with
layout "planes" the blocks layout's output bit for bit (the same arithmetic in the same order).
Runs on Intel's CPU OpenCL and SYCL devices; the CUDA kernels are compiled with nvcc for sm_90.
"""

from __future__ import annotations

import numpy as np
import pytest

import qkgen
import qkgen.runtime.paths
from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.backends.cuda_toolchain import find_nvcc
from qkgen.errors import QKGenValueError
from qkgen.formats import reference
from qkgen.formats.layout import field_planes, from_planes, to_planes
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.int8dot import is_block_weight
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.runtime import api

from .matrix import spread
from .test_cuda_compile import assert_build_without_warnings
from .test_generated_source import assert_read_well

INT8DOT = get_op("gemv_int8dot").formats()
LEGACY = [f for f in INT8DOT if is_block_weight(F.get(f))]
BACKENDS = [b for b in ("opencl", "sycl") if get(b).is_available()]
needs_device = pytest.mark.skipif(not BACKENDS, reason="no OpenCL or SYCL device")
pytestmark = [pytest.mark.early, pytest.mark.quick_build]  # one of the longest files: make test starts it first (tests/conftest.py)
N_ROWS = 67  # not a multiple of any team's rows per work-group


def x_host(rng, m: int, k: int, dtype: str) -> np.ndarray:
    x = rng.standard_normal((m, k)).astype(np.float32)
    return x.astype(np.float16) if dtype == "f16" else reference.round_to(x, "bf16") if dtype == "bf16" else x


def weight(fmt: str, rng, n: int = N_ROWS, blocks: int = 7) -> qkgen.QTensor:
    k = blocks * F.get(fmt).block  # an odd count of blocks per row
    return reference.quantize(rng.standard_normal((n, k)).astype(np.float32), fmt)


# ---- the layout, from the row ----


@pytest.mark.parametrize("fmt", [*INT8DOT, "q8_1"])
def test_planes_follow_the_fields(fmt, rng):
    row = F.get(fmt)
    planes = field_planes(row)
    assert sorted(p.field for p in planes) == sorted(f.name for f in row.fields)
    assert sum(p.nbytes for p in planes) == row.block_bytes
    for p in planes:
        assert p.nbytes == row.member(p.field).nbytes
        assert p.before % p.align == 0 and p.nbytes % p.align == 0  # each entry as aligned as the plane says
    assert [p.align for p in planes] == sorted((p.align for p in planes), reverse=True)
    qt = weight(fmt, rng, n=5) if fmt != "q8_1" else reference.quantize(rng.standard_normal((5, 96)), "q8_1")
    got = to_planes(row, qt.data)
    assert got.size == qt.data.size
    blocks = np.asarray(qt.data).reshape(-1, row.block_bytes)
    nb = blocks.shape[0]
    for p in planes:  # plane p is field p of every block, in block order
        at = row.offsets[p.field]
        want = blocks[:, at : at + p.nbytes].reshape(-1)
        assert np.array_equal(got[p.before * nb : p.before * nb + want.size], want), p.field
    assert np.array_equal(from_planes(row, got), np.asarray(qt.data))
    assert np.array_equal(reference.to_planes(qt), got)


def test_planes_need_inline_blocks():
    with pytest.raises(QKGenValueError, match="inline block row"):
        field_planes(F.get("nf4"))


# ---- repack_planes on the device ----


@needs_device
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", INT8DOT)
def test_repack_equals_numpy(backend, fmt, rng, poisoned):
    qt = weight(fmt, rng, n=3, blocks=7 if F.get(fmt).block == 32 else 3)  # 21 or 9 blocks: odd counts
    dev = open_device(backend)
    planes = api.weight_planes(qt, dev)
    got = dev.download(api.planes_array(qt, dev), "u8", qt.data.size)
    assert np.array_equal(got, reference.to_planes(qt))
    assert api.weight_planes(qt, dev) is planes  # made once per weight and device


# ---- quantize_q8_1 in planes ----


@needs_device
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_quantize_q8_1_planes(backend, dtype, rng, poisoned):
    x = x_host(rng, 3, 7 * 32, dtype)
    got = np.asarray(api.quantize_q8_1_device(x, backend=backend, layout="planes")).reshape(-1)
    want = reference.quantize(reference.host_f32(x, dtype), "q8_1")
    act = F.get("q8_1")
    nb = want.data.size // act.block_bytes
    qs = got[: nb * 32].view(np.int8).reshape(-1)
    d, s = got[nb * 32 : nb * 34].view("<f2"), got[nb * 34 :].view("<f2")
    blocks = want.data.reshape(nb, act.block_bytes)
    assert np.array_equal(qs, reference.unpack_codes(want).reshape(-1))
    assert np.array_equal(d, blocks[:, 0:2].copy().view("<f2").reshape(-1))
    assert np.array_equal(s, blocks[:, 2:4].copy().view("<f2").reshape(-1))
    assert np.array_equal(got, reference.to_planes(want))


# ---- gemv_int8dot in planes: the blocks layout's output, bit for bit ----


def _both(qt, x, backend):
    """(y through the blocks layout, y through planes), each by gemv_plans and a Bound."""
    from qkgen.runtime.plan import Bound

    out = []
    for layout in ("blocks", "planes"):
        plans, sizes = api.gemv_plans(qt, x, "int8dot", backend, None, layout=layout)
        arrays, _ = api.weight_values(qt)
        if layout == "planes":
            assert all(p.ks.name.endswith("_planes") for p in plans)
            arrays["planes"] = api.weight_planes(qt, plans[0].dev)
        bound = Bound([(p, sizes) for p in plans], arrays, {"x": x}, None, "y", (sizes["M"], sizes["N"]))
        out.append(bound({"x": x}))
    return out


def _cases(backend: str):
    """Every row with one dtype and one M, both taking turns (tests/matrix.py): the layouts share the
    dtype's store, which test_int8dot checks for every row. make test-full: every dtype of each row."""
    dtypes, ms = (("f32", "f16", "bf16"), (1, 3, 8)) if backend == "opencl" else (("f16", "bf16"), (1, 3))
    return [pytest.param(backend, f, d, m, id=f"{backend}-{f}-{d}-m{m}")
            for (f, d), m in spread(spread(INT8DOT, dtypes, lambda f: 0), ms, lambda c: c[1])]  # fmt: skip


@needs_device
@pytest.mark.parametrize("backend, fmt, dtype, m", [c for b in BACKENDS for c in _cases(b)])
def test_planes_equal_blocks(backend, fmt, dtype, m, rng, poisoned):
    qt = weight(fmt, rng, blocks=7 if F.get(fmt).block == 32 else 3)
    x = x_host(rng, m, qt.shape[1], dtype)
    yb, yp = _both(qt, x, backend)
    assert yb.shape == yp.shape == (m, N_ROWS)
    assert not np.isnan(reference.host_f32(yb, dtype)).any()
    assert np.array_equal(np.asarray(yb).view(np.uint8), np.asarray(yp).view(np.uint8))


@needs_device
@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_call_through_the_api(backend, rng, poisoned, monkeypatch):
    """With the layout default set to planes, qkgen.gemv repacks the weight once and its warm
    calls reuse the planes; results equal the blocks layout's."""
    qt = weight("q4_0", rng)
    x = x_host(rng, 3, qt.shape[1], "f16")
    want = qkgen.gemv(qt, x, path="int8dot", backend=backend)
    qt2 = qt.with_arrays(data=np.array(qt.data))  # a fresh weight: no bound calls yet
    monkeypatch.setattr(qkgen.runtime.paths, "INT8DOT_LAYOUT", {backend: "planes"})
    y1 = qkgen.gemv(qt2, x, path="int8dot", backend=backend)
    (planes,) = qt2.__dict__["_qkgen_planes"].values()
    y2 = qkgen.gemv(qt2, x, path="int8dot", backend=backend)
    (again,) = qt2.__dict__["_qkgen_planes"].values()
    assert again is planes
    assert len(qt2.__dict__["_qkgen_calls"]) == 1  # the second call was a warm one
    for y in (y1, y2):
        assert np.array_equal(np.asarray(y).view(np.uint8), np.asarray(want).view(np.uint8))


# ---- rendering: a knob, named, refused where not written ----


def test_blocks_is_the_default_source():
    for fmt in LEGACY:
        a = render("gemv_int8dot", fmt, "cuda-sm90", dtype="f16", mmax=8)
        b = render("gemv_int8dot", fmt, "cuda-sm90", dtype="f16", mmax=8, layout="planes")
        assert b.name == a.name + "_planes" and "planes" not in a.source and "w_qs" in b.source
        assert "uint4" in b.source  # 16-byte code loads from the planes


def test_bad_layouts_are_refused():
    with pytest.raises(QKGenValueError, match="layout: 'rows'; allowed: blocks, planes"):
        render("gemv_int8dot", "q4_0", "opencl", layout="rows")
    with pytest.raises(QKGenValueError, match="layout"):
        api.quantize_q8_1_device(np.ones((1, 32), np.float32), layout="rows")


PLANES_KERNELS = [("gemv_int8dot", f, dict(dtype=d, mmax=m, layout="planes"))
                  for f in INT8DOT for d in ("f32", "f16", "bf16") for m in (1, 8)]  # fmt: skip
PLANES_KERNELS += [("quantize_q8_1", "q8_1", dict(dtype=d, layout="planes")) for d in ("f32", "f16", "bf16")]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_planes_sources_read_well(profile):
    assert_read_well(profile, [render(op, fmt, profile, **kw) for op, fmt, kw in PLANES_KERNELS])


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_planes_kernels_compile_for_sm90():
    kernels = PLANES_KERNELS + [("repack_planes", f, dict(dtype="u8")) for f in [*INT8DOT, "q8_1"]]
    assert_build_without_warnings([render(op, fmt, "cuda-sm90", **kw) for op, fmt, kw in kernels])


# ---- x_planes: x in planes, W in its blocks ----


def _x_planes_cases(backend: str):
    dtypes = ("f32", "f16") if backend == "opencl" else ("f16",)
    return [pytest.param(backend, f, d, m, id=f"{backend}-{f}-{d}-m{m}")
            for (f, d), m in spread([(f, d) for f in INT8DOT for d in dtypes], (1, 3), lambda c: c[0])]  # fmt: skip


@needs_device
@pytest.mark.parametrize("backend, fmt, dtype, m", [c for b in BACKENDS for c in _x_planes_cases(b)])
def test_x_planes_equal_blocks(backend, fmt, dtype, m, rng, poisoned, monkeypatch):
    """Where runtime.paths takes x_planes for a row, gemv_plans quantizes x to planes and the kernel
    reads them: the blocks layout's output bit for bit, for block and super-block rows alike."""
    qt = weight(fmt, rng, blocks=7 if F.get(fmt).block == 32 else 3)
    x = x_host(rng, m, qt.shape[1], dtype)
    want = qkgen.gemv(qt, x, path="int8dot", backend=backend)
    kind = open_device(backend).target.backend
    monkeypatch.setattr(qkgen.runtime.paths, "INT8DOT_X_PLANES", {(kind, m > 1): frozenset({fmt})})
    plans, _ = api.gemv_plans(qt, x, "int8dot", backend, None)
    assert plans[0].ks.name.endswith("_planes") and plans[1].ks.name.endswith("_x_planes1")
    got = qkgen.gemv(qt.with_arrays(data=np.array(qt.data)), x, path="int8dot", backend=backend)
    assert not np.isnan(reference.host_f32(want, dtype)).any()
    assert np.array_equal(np.asarray(got).view(np.uint8), np.asarray(want).view(np.uint8))


def test_x_planes_knob():
    a = render("gemv_int8dot", "q4_k", "cuda-sm90", dtype="f16")
    b = render("gemv_int8dot", "q4_k", "cuda-sm90", dtype="f16", x_planes=True)
    assert b.name == a.name + "_x_planes1" and "x_qs" not in a.source and "x_qs + xb * 32u" in b.source
    with pytest.raises(QKGenValueError, match="x_planes: False; layout 'planes'"):
        render("gemv_int8dot", "q4_0", "opencl", layout="planes", x_planes=False)
    with pytest.raises(QKGenValueError, match="stage_x: True"):
        render("gemv_int8dot", "q4_k", "opencl", x_planes=True, stage_x=True)


X_PLANES_KERNELS = [("gemv_int8dot", f, dict(dtype=d, mmax=m, x_planes=True))
                    for f in INT8DOT for d in ("f32", "f16", "bf16") for m in (1, 8)]  # fmt: skip


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_x_planes_sources_read_well(profile):
    assert_read_well(profile, [render(op, fmt, profile, **kw) for op, fmt, kw in X_PLANES_KERNELS])


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc not found")
def test_x_planes_kernels_compile_for_sm90():
    assert_build_without_warnings([render(op, fmt, "cuda-sm90", **kw) for op, fmt, kw in X_PLANES_KERNELS])


def test_x_planes_defaults():
    """runtime.paths takes x_planes on CUDA at M > 1 for the rows it lists (q3_k, q6_k), nowhere else."""
    from qkgen.kernels.target import get_target

    cuda, cpu = get_target("cuda-sm90"), get_target("opencl-intel-cpu")
    for f in ("q3_k", "q6_k"):
        assert qkgen.runtime.paths.default_x_planes(cuda, F.get(f), 8)
        assert not qkgen.runtime.paths.default_x_planes(cuda, F.get(f), 1)
        assert not qkgen.runtime.paths.default_x_planes(cpu, F.get(f), 8)
    assert not qkgen.runtime.paths.default_x_planes(cuda, F.get("q4_k"), 8)
