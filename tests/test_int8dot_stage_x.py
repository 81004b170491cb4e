"""gemv_int8dot with stage_x (each step's q8_1 blocks copied to local memory once per work-group,
read from there by every team) on Intel's CPU OpenCL, SYCL, and OpenCL rendered without
sub-groups: the same arithmetic per block in the same order as without stage_x, so the output is
the unstaged kernel's bit for bit. Every legacy row and the K-quant rows, both layouts, M = 1, 3, 8,
f32/f16/bf16 outputs, N not a multiple of the rows per work-group, K with a tail step, poisoned
outputs; a broken staging index fails; nvcc builds the variants for sm_90."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.backends.cuda_toolchain import find_nvcc, nvcc_arches
from qkgen.errors import QKGenValueError
from qkgen.formats import reference
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.int8dot import is_block_weight
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES, get_target
from qkgen.runtime.plan import Plan

from .matrix import one_per_group, spread

INT8DOT = get_op("gemv_int8dot").formats()
LEGACY = [f for f in INT8DOT if is_block_weight(F.get(f))]  # q4_0 .. q8_0
KQUANTS = [f for f in INT8DOT if f not in LEGACY]
N_ROWS = 67  # prime: not a multiple of any work-group's rows
TARGETS = ["opencl", "sycl", "opencl-no-subgroups"]
pytestmark = [pytest.mark.early, pytest.mark.quick_build]  # one of the longest files: make test starts it first (tests/conftest.py)


@pytest.fixture(scope="module")
def devices():
    return {}


def _device(devices, where: str):
    backend = "sycl" if where == "sycl" else "opencl"
    if not get(backend).is_available():
        pytest.skip(f"{backend}: {get(backend).why_unavailable()}")
    if where not in devices:
        dev = open_device(backend, 0)
        t = dev.target
        if where.endswith("no-subgroups"):
            t = dataclasses.replace(t, subgroup_size=0, name=t.name + "-no-subgroups")
        devices[where] = (dev, t)
    return devices[where]


def _k_with_tail(ks, fmt) -> int:
    """A K of whole weight blocks over at least two steps, the last one holding fewer chunks than a
    team takes (a step: team chunks of the row's sub-block, or of 32 elements)."""
    ept = fmt.sub_block if fmt.sub_scales else 32
    step = ks.param("lanes") * ks.param("slices") * ept
    k = step + fmt.block
    if fmt.block % step:  # else every K of whole blocks is whole steps (q6_k, 16 lanes, one slice): no tail
        while k % step == 0:
            k += fmt.block
    return k


def _run(dev, ks, qt, xq: np.ndarray, m: int) -> np.ndarray:
    """y of one launch of ks on q8_1 bytes xq (in ks's layout), the weight in ks's layout."""
    plan = Plan(dev, ks)
    n, k = qt.shape
    sizes = dict(N=n, K=k, M=m)
    weight = {"planes": reference.to_planes(qt)} if any(a.name == "planes" for a in ks.args) else {"data": np.asarray(qt.data)}
    ((ybuf, yarr, dt),) = plan.outputs(sizes).values()
    plan.launch({**weight, "xq": xq, "y": ybuf}, sizes)
    return np.asarray(dev.download(yarr, dt, m * n)).reshape(m, n)


def _pair(devices, where, name, dtype, m, rng, **params):
    """(device, the unstaged kernel, the staged one, weight, q8_1 bytes of x) for one case."""
    dev, t = _device(devices, where)
    fmt = F.get(name)
    kw = dict(dtype=dtype, mmax=1 if m == 1 else 8, **params)
    plain = render("gemv_int8dot", fmt, t, **kw)
    staged = render("gemv_int8dot", fmt, t, stage_x=True, **kw)
    dev.compile_many([plain, staged])  # SYCL: one build of both (each build parses the headers again)
    assert staged.param("stage_x") and "stage_x1" in staged.name and "xstage" in staged.source
    assert "xstage" not in plain.source
    k = _k_with_tail(staged, fmt)
    qt = reference.quantize(rng.standard_normal((N_ROWS, k)).astype(np.float32), fmt)
    xqt = reference.quantize(rng.standard_normal((m, k)).astype(np.float32), "q8_1")
    xq = reference.to_planes(xqt) if params.get("layout") == "planes" else np.asarray(xqt.data)
    return dev, plain, staged, qt, xq


def _same(a: np.ndarray, b: np.ndarray, dtype: str) -> None:
    assert not np.isnan(reference.host_f32(a, dtype)).any()  # every output written
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _cases():
    """Every row, layout and dtype on one target, each with one M, the targets and the Ms taking
    turns (tests/matrix.py; make test-full: every target)."""
    out = []
    for where in TARGETS:
        dtypes, ms = (("f16", "bf16"), (1, 3)) if where == "sycl" else (("f32", "f16", "bf16"), (1, 3, 8))
        rows = [(name, layout, d) for name in LEGACY for layout in ("blocks", "planes") for d in dtypes]
        rows += [(name, "blocks", "f16") for name in KQUANTS]  # planes are not written for them
        out += [(where, name, layout, d, m) for (name, layout, d), m in spread(rows, ms, lambda r: r[:2])]
    return [pytest.param(*c, id="{}-{}-{}-{}-m{}".format(*c)) for c in one_per_group(out, lambda c: c[1:4])]


@pytest.mark.parametrize("where, name, layout, dtype, m", _cases())
def test_stage_x_equals_unstaged(where, name, layout, dtype, m, devices, rng, poisoned):
    # wg 256: two or more teams share each step's blocks (the case stage_x is for)
    dev, plain, staged, qt, xq = _pair(devices, where, name, dtype, m, rng, layout=layout, wg=256)
    if where.endswith("no-subgroups"):
        assert "sub_group" not in staged.source
    assert staged.param("wg") == 256 and staged.wg // (staged.param("lanes") * staged.param("slices")) >= 2
    _same(_run(dev, staged, qt, xq, m), _run(dev, plain, qt, xq, m), dtype)


# Shapes: the defaults (one team a work-group), four teams, rpw 2 with 2 slices, one slice, one row a team
SHAPES = [{}, {"wg": 512}, {"wg": 512, "slices": 2, "rpw": 2}, {"wg": 256, "slices": 1}, {"rpw": 1}]


SHAPE_ROWS = [("q4_0", "planes"), ("q5_1", "blocks"), ("q8_0", "planes"), ("q4_k", "blocks"),
              ("q6_k", "blocks")]  # fmt: skip


def _shape_id(params: dict) -> str:
    return "-".join(f"{k}{v}" for k, v in params.items()) or "default"


def _shape_cases():
    """Every shape, row and M on one target, the targets taking turns within a shape (tests/matrix.py)."""
    rows = [(p, name, layout, m) for p in SHAPES for name, layout in SHAPE_ROWS for m in (1, 5)]
    return [pytest.param(where, p, name, layout, m, id=f"{where}-{_shape_id(p)}-{name}-{layout}-m{m}")
            for (p, name, layout, m), where in spread(rows, TARGETS, lambda r: _shape_id(r[0]))]  # fmt: skip


@pytest.mark.parametrize("where, params, name, layout, m", _shape_cases())
def test_stage_x_shapes(where, params, name, layout, m, devices, rng, poisoned):
    p = {**params, **({"layout": layout} if layout == "planes" else {})}
    dev, plain, staged, qt, xq = _pair(devices, where, name, "f16", m, rng, **p)
    _same(_run(dev, staged, qt, xq, m), _run(dev, plain, qt, xq, m), "f16")


# A wrong staging index must show: each mutation moves one index of the staged blocks.
MUTATIONS = {
    "store-blocks": ("blocks", lambda s: s.replace("xstage[p] =", "xstage[p ^ 1u] =")),
    "store-planes": ("planes", lambda s: s.replace("+ (j % 2u) * 4u;", "+ ((j + 1u) % 2u) * 4u;")),
    "store-halves": ("planes", lambda s: s.replace("xstage[p * 9u] =", "xstage[(p ^ 1u) * 9u] =")),
    "read": ("blocks", lambda s: re.sub(r"tlane\) \* 9u;", "(tlane ^ 1u)) * 9u;", s)),
    "read-code": ("planes", lambda s: s.replace("xstage[xl + 1u + k]", "xstage[xl + 2u + k % 7u]")),
    "step": ("blocks", lambda s: s.replace("const uint b = s0 + tlane;", "const uint b = s0 + (tlane ^ 1u);")),
}


@pytest.mark.parametrize("mutation, where", spread(sorted(MUTATIONS), TARGETS, lambda _: 0))
def test_a_wrong_staging_index_fails(where, mutation, devices, rng):
    layout, mutate = MUTATIONS[mutation]
    dev, plain, staged, qt, xq = _pair(devices, where, "q4_1", "f32", 3, rng, layout=layout, wg=256)
    want = _run(dev, plain, qt, xq, 3)
    _same(_run(dev, staged, qt, xq, 3), want, "f32")  # as rendered: equal
    bad = mutate(staged.source)
    assert bad != staged.source
    got = _run(dev, dataclasses.replace(staged, source=bad), qt, xq, 3)
    assert not np.array_equal(got, want)


# ---- rendering ----


def test_defaults_do_not_stage():
    for name in INT8DOT:
        for mmax in (1, 8):
            src = render("gemv_int8dot", name, "cuda-sm90", dtype="f16", mmax=mmax).source
            assert "xstage" not in src and "stage_x" not in src
            on = render("gemv_int8dot", name, "cuda-sm90", dtype="f16", mmax=mmax, stage_x=True)
            assert "xstage" in on.source and "stage_x=1" in on.source and on.name.endswith("stage_x1")
            assert on.source.count("__syncthreads();") >= 2


@pytest.mark.parametrize("name, params, word", [
    ("q4_0", {"slices": 8, "wg": 256}, "^slices: 8"),  # 8 x 256 blocks of 36 bytes: 72 KiB staged
    ("q4_k", {"slices": 8, "wg": 256}, "^slices: 8"),
    ("q4_0", {"wg": 96}, "^wg: 96"),
])  # fmt: skip
def test_stage_x_refuses_what_cannot_work(name, params, word):
    with pytest.raises(QKGenValueError, match=word):
        render("gemv_int8dot", name, "cuda-sm90", dtype="f16", mmax=8, **{"stage_x": True, **params})


def test_stage_x_local_memory_at_the_limit():
    # slices 4 at M = 8: 36 KiB staged; without sub-groups wg 1024, rpw 8 add 4 KiB of scratch and 8 KiB
    # of the slices' sums: exactly 48 KiB, allowed; slices 8 stage 72 KiB, refused by name
    t = dataclasses.replace(get_target("cuda-sm90"), subgroup_size=0, name="cuda-sm90-no-subgroups")
    ks = render("gemv_int8dot", "q4_0", t, dtype="f16", mmax=8, stage_x=True, wg=1024, rpw=8)
    assert "__shared__ uint xstage[9216];" in ks.source
    with pytest.raises(QKGenValueError, match=r"^slices: 8; .* needs 81920 bytes of local memory; allowed: at most 49152"):
        render("gemv_int8dot", "q4_0", t, dtype="f16", mmax=8, stage_x=True, wg=1024, slices=8)
    render("gemv_int8dot", "q4_0", t, dtype="f16", mmax=3, stage_x=True, wg=1024, slices=8)  # fits at mmax 3


def _stage_x_kernels():
    """render() arguments of the stage_x kernels the source rules and nvcc check: every row, x dtype
    and layout at M = 1 and M = 8, and the shapes the lead times."""
    for name in INT8DOT:
        layouts = ("blocks", "planes") if name in LEGACY else ("blocks",)
        for layout in layouts:
            for dtype in ("f32", "f16", "bf16"):
                for mmax in (1, 8):
                    yield name, {"dtype": dtype, "mmax": mmax, "layout": layout}
            for extra in ({"wg": 256}, {"wg": 512}, {"wg": 256, "slices": 2, "rpw": 2}, {"wg": 512, "slices": 2}):
                yield name, {"dtype": "f16", "mmax": 8, "layout": layout, **extra}


def _renders(profile):
    return [render("gemv_int8dot", name, profile, stage_x=True, **kw) for name, kw in _stage_x_kernels()]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_stage_x_source_reads_well(profile):
    from .test_generated_source import assert_read_well

    assert_read_well(profile, _renders(profile))


@pytest.mark.skipif(find_nvcc() is None or "sm_90" not in nvcc_arches(), reason="nvcc for sm_90 not found")
def test_stage_x_compiles_for_sm90_without_warnings():
    from .test_cuda_compile import assert_build_without_warnings

    assert_build_without_warnings(_renders("cuda-sm90"))


# The cases the lead times on the H100 (docs/bench/scripts/gemv_sweep.py with this file): each renders
# for cuda-sm90, and its stage_x kernels equal the unstaged ones here with 32-lane sub-groups
# (Intel's CPU device takes 32: CUDA's shape) at a small size; make test runs one case of each row,
# M and layout, make test-full all of them.
SWEEP = Path(__file__).parent.parent / "docs" / "bench" / "scripts" / "sweep8_int8dot_stage.json"
LEAD = [(name, m, ov) for name, kw, n, k, m, dtype, ov in json.loads(SWEEP.read_text())]


def test_lead_cases_render_for_sm90():
    assert 30 <= len(LEAD) <= 40
    names = set()
    for name, m, ov in LEAD:
        assert ov.pop("op") == "gemv_int8dot"
        names.add(render("gemv_int8dot", name, "cuda-sm90", dtype="f16", mmax=1 if m == 1 else 8, **ov).name)
    assert len(names) == len(LEAD)


# of the staged lead cases of one row, M and layout, one (tests/matrix.py): the work-group shapes
# take turns across the rows, so every shape but one of q4_k's two runs
def _lead_key(c) -> tuple:
    return c[0], c[1], c[2].get("layout", "blocks")


@pytest.mark.parametrize("name, m, ov", one_per_group([c for c in LEAD if c[2].get("stage_x")], _lead_key),
                         ids=str)  # fmt: skip
def test_lead_cases_with_32_lanes(name, m, ov, devices, rng, poisoned):
    if "opencl-32" not in devices:
        dev, t = _device(devices, "opencl")
        devices["opencl-32"] = (dev, dataclasses.replace(t, subgroup_size=32, name=t.name + "-32-lanes"))
    params = {k: v for k, v in ov.items() if k not in ("op", "stage_x")}
    dev, plain, staged, qt, xq = _pair(devices, "opencl-32", name, "f16", m, rng, **params)
    assert staged.param("lanes") == 32
    _same(_run(dev, staged, qt, xq, m), _run(dev, plain, qt, xq, m), "f16")
