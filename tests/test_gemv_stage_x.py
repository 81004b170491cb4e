"""The float GEMV with stage_x (x staged in local memory as f32, once per work-group and step) on
Intel's CPU OpenCL, SYCL, and OpenCL rendered without sub-groups (the local-memory sums, which
share the staging array): every listed row, x dtype and M within the f32 bound of the float64
product, N not a multiple of the rows per work-group, K with a tail step, poisoned outputs."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.backends.cuda_toolchain import find_nvcc, nvcc_arches
from qkgen.errors import QKGenValueError
from qkgen.formats import reference
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES, get_target
from qkgen.runtime.api import weight_values
from qkgen.runtime.plan import Plan
from qkgen.tools import check

from .matrix import but, one_per_group, spread

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

CASES = [("q4_0", {}), ("q8_0", {}), ("q5_1", {}), ("nf4", {"nested": True, "blocksize": 64}),
         ("int4", {"scale_mode": "row"}), ("q4_k", {})]  # fmt: skip
N_ROWS = 67  # not a multiple of any work-group's rows
TARGETS = ["opencl", "sycl", "opencl-no-subgroups"]


def _available(backend: str) -> bool:
    return get(backend).is_available()


@pytest.fixture(scope="module")
def devices():
    return {}


def _device(devices, where: str):
    backend = "sycl" if where == "sycl" else "opencl"
    if not _available(backend):
        pytest.skip(f"{backend}: {get(backend).why_unavailable()}")
    if where not in devices:
        dev = open_device(backend, 0)
        t = dev.target
        if where.endswith("no-subgroups"):
            t = dataclasses.replace(t, subgroup_size=0, name=t.name + "-no-subgroups")
        devices[where] = (dev, t)
    return devices[where]


def _k_with_tail(ks, fmt, group: int = 0) -> int:
    """A K of whole chunks and blocks (and scale groups, group > 0) whose last step holds fewer
    chunks than a team takes; where every whole unit is whole steps (a team takes a block a step),
    three units: no step can be partial."""
    ept = ks.param("ept")
    step = ks.param("lanes") * ks.param("slices") * ept
    unit = math.lcm(ept, fmt.block if fmt.inline else 1, group or 1)
    if unit % step == 0:
        return 3 * unit
    k = step + unit
    while k % step == 0 or k < step:
        k += unit
    return k


def _run(dev, ks, qt, x, m: int) -> np.ndarray:
    plan = Plan(dev, ks)
    arrays, sizes = weight_values(qt)
    n, k = qt.shape
    sizes.update(N=n, K=k, M=m)
    if qt.scale_mode == "group":
        sizes["groups_per_row"] = k // qt.blocksize
    ((ybuf, yarr, dt),) = plan.outputs(sizes).values()
    plan.launch({**arrays, "x": x, "y": ybuf}, sizes)
    return dev.download(yarr, dt, m * n).reshape(m, n)


def _case(devices, where, name, kw, dtype, mmax, m, rng, stage=True, **params):
    dev, t = _device(devices, where)
    fmt = F.get(name)
    rk = dict(dtype=dtype, blocksize=kw.get("blocksize"), nested=kw.get("nested", False),
              scale_mode=kw.get("scale_mode"), mmax=mmax, **({"stage_x": True} if stage else {}), **params)  # fmt: skip
    ks = render("gemv", fmt, t, **rk)
    k = _k_with_tail(ks, fmt, kw["blocksize"] if kw.get("scale_mode") == "group" else 0)
    qt = reference.quantize(rng.standard_normal((N_ROWS, k)).astype(np.float32), fmt, **kw)
    x = check.gemv_x(rng, m, k, dtype)
    return dev, ks, qt, x


def _assert_close(y, x, qt, dtype):
    err, bound = check.gemv_error(y, x, qt, dtype)
    bad = err > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} outside the bound; worst {np.max(err - bound)}"


def _matrix():
    """Every target, row and dtype, each with one (M tile, M), taking turns within a row (tests/matrix.py)."""
    rows = [(where, name, kw, dtype) for where in TARGETS for name, kw in CASES for dtype in ("f32", "f16", "bf16")]
    return [pytest.param(where, name, kw, dtype, mmax, m,
                         id=f"{where}-{name}-{'-'.join(map(str, kw.values()))}-{dtype}-mmax{mmax}-m{m}")
            for (where, name, kw, dtype), (mmax, m) in spread(rows, [(1, 1), (8, 3), (8, 8)],
                                                               lambda r: (r[0], r[1], str(r[2])))]  # fmt: skip


@pytest.mark.parametrize("where, name, kw, dtype, mmax, m", _matrix())
def test_stage_x_matches_reference(where, name, kw, dtype, mmax, m, devices, rng, poisoned):
    dev, ks, qt, x = _case(devices, where, name, kw, dtype, mmax, m, rng)
    assert ks.param("stage_x") and "stage_x1" in ks.name
    if where.endswith("no-subgroups"):
        assert "sub_group" not in ks.source
    _assert_close(_run(dev, ks, qt, x, m), x, qt, dtype)


# More lane groups sharing the staged x (wg 256, 512), one slice, one row per lane group, a
# smaller chunk (ept 8: an odd number of float4, no padding)
SHAPES = [{"wg": 256}, {"wg": 512, "slices": 1}, {"rpw": 1, "slices": 4}, {"ept": 8}]


@pytest.mark.parametrize("where", TARGETS)
@pytest.mark.parametrize("params", SHAPES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
@pytest.mark.parametrize("name,kw", [("q8_0", {}), ("nf4", {"nested": True, "blocksize": 64}),
                                     ("int4", {"scale_mode": "row"})], ids=lambda c: c if isinstance(c, str) else "")
@pytest.mark.parametrize("mmax,m", [(1, 1), (8, 5)])
def test_stage_x_shapes(where, params, name, kw, mmax, m, devices, rng, poisoned):
    _, t = _device(devices, where)
    lanes, slices = t.subgroup_size or 32, params.get("slices", 2)
    sums = params.get("rpw", 4 if mmax > 1 else 1) * mmax
    staged = mmax * lanes * slices * 20 * 4  # chunks of 16 elements at most at M = 8, 20 floats apart
    # the sums meet in local memory without sub-groups, and by default wherever x is staged at M > 1
    local_sums = 0 if t.subgroup_size and mmax == 1 else params.get("wg", 128) * (sums + 1) * 4
    if max(staged, local_sums) > 48 << 10:  # refused by name, only where past 48 KiB
        with pytest.raises(QKGenValueError, match="^wg" if local_sums > 48 << 10 else "^slices"):
            _case(devices, where, name, kw, "f16", mmax, m, rng, **params)
        return
    dev, ks, qt, x = _case(devices, where, name, kw, "f16", mmax, m, rng, **params)
    assert all(ks.param(k) == v for k, v in params.items())
    _assert_close(_run(dev, ks, qt, x, m), x, qt, "f16")


# A wrong staging index must show: each mutation moves one index of the staged x.
MUTATIONS = {
    "store": lambda s: s.replace("j / 2u * 5u + j % 2u * 2u", "j / 2u * 5u + (j + 1u) % 2u * 2u"),
    "read": lambda s: s.replace("tlane * 5u + q]", "(tlane ^ 1u) * 5u + q]"),
    "step": lambda s: s.replace("const uint c0 = s0 + tlane;", "const uint c0 = s0 + (tlane ^ 1u);"),
}


@pytest.mark.parametrize("where", TARGETS)
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_wrong_staging_index_fails(where, mutation, devices, rng):
    dev, ks, qt, x = _case(devices, where, "q8_0", {}, "f16", 8, 3, rng)
    assert ks.param("ept") == 16  # the strings the mutations replace: 2 loads a chunk, 5 float4 apart
    _assert_close(_run(dev, ks, qt, x, 3), x, qt, "f16")  # as rendered: right
    bad = MUTATIONS[mutation](ks.source)
    assert bad != ks.source
    y = _run(dev, dataclasses.replace(ks, source=bad), qt, x, 3)
    err, bound = check.gemv_error(y, x, qt, "f16")
    assert (err > bound).any()


def test_defaults_stage_where_measured():
    """Staged by default at M > 1 where two slices' x fits in local memory (chunks of 16 elements),
    never at M = 1 nor for whole 32-element blocks at M = 8 (2026-11-24 H100 runs)."""
    for name, kw in CASES:
        for mmax in (1, 8):
            ks = render("gemv", name, "cuda-sm90", dtype="f16", mmax=mmax, **kw)
            staged = mmax > 1 and ks.param("ept") <= 16
            assert ("xv[" in ks.source) == staged and ("stage_x=1" in ks.source) == staged, (name, mmax)
            assert not ks.name.endswith("stage_x1")  # a default is not named
            on = render("gemv", name, "cuda-sm90", dtype="f16", mmax=mmax, stage_x=True, **kw)
            assert "xv[" in on.source and "stage_x=1" in on.source and on.name.endswith("stage_x1")


@pytest.mark.parametrize("name,params,word", [
    ("q8_0", {"slices": 4}, "^slices: 4"),  # 8 x 128 chunks of 20 floats: 80 KiB of staged x
    ("q4_0", {"slices": 2}, "^slices: 2"),  # whole blocks: 8 x 64 chunks of 36 floats
    ("q8_0", {"wg": 96}, "^wg: 96"),  # not a power of two
])  # fmt: skip
def test_stage_x_refuses_what_cannot_work(name, params, word):
    with pytest.raises(QKGenValueError, match=word):
        render("gemv", name, "cuda-sm90", dtype="f16", stage_x=True, mmax=8, **params)
    render("gemv", name, "cuda-sm90", dtype="f16", stage_x=True, mmax=8)  # its defaults fit


def test_stage_x_refuses_local_sums_past_the_limit():
    t = dataclasses.replace(get_target("cuda-sm90"), subgroup_size=0, name="cuda-sm90-no-subgroups")
    with pytest.raises(QKGenValueError, match="^wg: 512"):
        render("gemv", "q8_0", t, dtype="f16", stage_x=True, mmax=8, wg=512, slices=1)


def _stage_x_kernels():
    """render() arguments of the stage_x kernels the source rules and nvcc check: every listed row
    and x dtype at M = 1 and M = 8, and the shapes the lead times (wg 256/512, one slice, rpw 2)."""
    for name, kw in CASES:
        for dtype in ("f32", "f16", "bf16"):
            for mmax in (1, 8):
                yield name, {**kw, "dtype": dtype, "mmax": mmax}
        for extra in ({"wg": 256}, {"wg": 512, "slices": 1}, {"rpw": 2, "wg": 256}, {"local_sums": True}):
            for mmax in (1, 8):
                yield name, {**kw, "dtype": "f16", "mmax": mmax, **extra}


def _renders(profile):
    out = []
    for name, kw in _stage_x_kernels():
        try:
            out.append(render("gemv", name, profile, stage_x=True, **kw))
        except QKGenValueError as e:  # only local memory past 48 KiB is refused
            assert "bytes of local memory" in str(e), e
    return out


@pytest.mark.parametrize("profile", list(PROFILES))
def test_stage_x_source_reads_well(profile):
    from .test_generated_source import assert_read_well

    kss = _renders(profile)
    assert len(kss) > 50
    assert_read_well(profile, kss)


@pytest.mark.skipif(find_nvcc() is None or "sm_90" not in nvcc_arches(), reason="nvcc for sm_90 not found")
def test_stage_x_compiles_for_sm90_without_warnings():
    from .test_cuda_compile import assert_build_without_warnings

    assert_build_without_warnings(_renders("cuda-sm90"))


# The cases the lead times on the H100 (docs/bench/scripts/gemv_sweep.py with this file), run here at
# a small size with 32-lane sub-groups (Intel's CPU device takes 32): CUDA's shape. make test runs
# one of the cases that differ only in wg (each wg still runs), make test-full all of them.
SWEEP = Path(__file__).parent.parent / "docs" / "bench" / "scripts" / "sweep7_stage_x.json"
LEAD = [(name, kw, m, ov) for name, kw, n, k, m, dtype, ov in json.loads(SWEEP.read_text())]


# of the lead cases that differ only in the work-group size, one (tests/matrix.py)
@pytest.mark.parametrize("name,kw,m,ov", one_per_group(LEAD, but("wg")), ids=lambda v: json_id(v))
def test_lead_cases_with_32_lanes(name, kw, m, ov, devices, rng, poisoned):
    if "opencl-32" not in devices:
        dev, t = _device(devices, "opencl")
        devices["opencl-32"] = (dev, dataclasses.replace(t, subgroup_size=32, name=t.name + "-32-lanes"))
    # the kernels sweep 7s timed: its {} was that run's defaults (no staging, shuffle sums)
    ov = {"stage_x": False, "local_sums": False, **ov}
    dev, ks, qt, x = _case(devices, "opencl-32", name, kw, "f16", 1 if m == 1 else 8, m, rng, stage=False, **ov)
    assert ks.param("lanes") == 32 and ks.param("stage_x", False) == ov["stage_x"]
    render("gemv", name, "cuda-sm90", dtype="f16", mmax=1 if m == 1 else 8, **kw, **ov)  # and for the H100
    _assert_close(_run(dev, ks, qt, x, m), x, qt, "f16")


def json_id(v) -> str:
    if isinstance(v, dict):
        return "-".join(f"{k}{int(x) if isinstance(x, bool) else x}" for k, x in v.items()) or "default"
    return str(v)
