"""quantize_q8_1's lane_group knob: a q8_1 block per lane group (a sub-group of 8, 16 or 32 lanes, or
the 32-lane local-memory tree without sub-groups), each lane 32 / lanes elements. The bytes equal the
reference codec's (and so the one-work-item-per-block kernel's) for every x dtype, both layouts,
shapes whose block count is no multiple of the work-group's blocks; a NaN wins its block's maximum
(d, s NaN, codes 0) though a sub-group maximum drops it; a broken lane index fails; nvcc builds it;
the runtime takes it where runtime.paths.INT8DOT_LANE_GROUP names the backend."""

import dataclasses

import numpy as np
import pytest

import qkgen
from qkgen.kernels.target import get_target
from qkgen.backends import get, open_device
from qkgen.formats import reference
from qkgen.kernels.render import render
from qkgen.runtime import paths
from qkgen.runtime.api import gemv_plans, quantize_q8_1_device, x_dtype
from qkgen.runtime.plan import Plan

from .test_int8dot import activations, f32_of, x_host

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

BACKENDS = [b for b in ("opencl", "sycl") if get(b).is_available()]
needs_device = pytest.mark.skipif(not BACKENDS, reason="no OpenCL or SYCL device")
ACT = qkgen.formats.get("q8_1")
# the lane groups: the device's own sub-group (16 on Intel's CPU: 2 elements a lane), 8 and 32
# lanes (4 and 1), and no sub-groups (the local-memory tree, 32 lanes)
GROUPS = {"sg16": {}, "sg8": {"subgroup_size": 8}, "sg32": {"subgroup_size": 32}, "tree": {"subgroup_size": 0}}


def quantize(backend: str, x: np.ndarray, group: str = "sg16", layout: str = "blocks", mutate=None) -> np.ndarray:
    """x quantized by quantize_q8_1 with lane_group on the backend's first device, its target's
    sub-groups as GROUPS[group] says; mutate: a change to the source before it is compiled."""
    dev = open_device(backend, 0)
    t = dataclasses.replace(dev.target, **GROUPS[group], name=f"{dev.target.name}-{group}")
    ks = render("quantize_q8_1", ACT, t, dtype=x_dtype(x), lane_group=True,
                **({} if layout == "blocks" else {"layout": layout}))  # fmt: skip
    assert ("sub_group" in ks.source) == (group != "tree") and ("barrier" in ks.source) == (group == "tree")
    if mutate:
        source = mutate(ks.source)
        assert source != ks.source
        ks = dataclasses.replace(ks, source=source)
    plan = Plan(dev, ks)
    sizes = {"nblocks": x.size // ACT.block}
    ((buf, arr, _),) = plan.outputs(sizes).values()
    plan.launch({"x": x, "xq": buf}, sizes)
    return dev.download(arr, "u8", sizes["nblocks"] * ACT.block_bytes)


def want_bytes(x32: np.ndarray, layout: str) -> np.ndarray:
    qt = reference.quantize(x32, "q8_1", allow_nonfinite=True)
    return reference.to_planes(qt) if layout == "planes" else qt.data


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    bad = np.flatnonzero(got != want)
    assert not bad.size, f"{bad.size} bytes differ, first at {bad[0]}: {got[bad[0]]} vs {want[bad[0]]}"


def test_off_by_default_and_named_when_on():
    base = render("quantize_q8_1", ACT, "cuda-sm90", dtype="f16")
    assert "lane_group" not in base.source and base.name == "quantize_q8_1_q8_1_f16"
    on = render("quantize_q8_1", ACT, "cuda-sm90", dtype="f16", lane_group=True)
    assert on.name == "quantize_q8_1_q8_1_f16_lane_group1"
    params = next(line for line in on.source.splitlines() if line.startswith(" * params:"))
    assert " lanes=32 lane_group=1 " in params and params.endswith(" wg=128"), params
    assert "qk_warp_max(amax)" in on.source
    assert render("quantize_q8_1", ACT, "cuda-sm90", dtype="f16", lane_group=False).source.replace(
        "_lane_group0", "") == base.source  # fmt: skip


def test_bad_values_name_the_parameter():
    with pytest.raises(qkgen.QKGenValueError, match=r"lane_group: 1; allowed: True or False"):
        render("quantize_q8_1", ACT, "cuda-sm90", lane_group=1)
    wide = dataclasses.replace(get_target("opencl-intel-gpu"), subgroup_size=64, subgroup_sizes=(), name="sg64")
    with pytest.raises(qkgen.QKGenValueError, match=r"lane_group: True needs lane groups that divide"):
        render("quantize_q8_1", ACT, wide, lane_group=True)
    with pytest.raises(qkgen.QKGenValueError, match=r"wg: 48; allowed: a power of two, a multiple of 32"):
        render("quantize_q8_1", ACT, "cuda-sm90", lane_group=True, wg=48)
    with pytest.raises(qkgen.QKGenValueError, match=r"lane_group: 'yes'; allowed: True, False or None"):
        quantize_q8_1_device(np.ones((1, 32), np.float32), lane_group="yes")


@needs_device
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("layout", ["blocks", "planes"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("m, k", [(1, 32), (3, 96), (1, 14336), (8, 14336)])
def test_bytes_equal_reference(backend, group, layout, dtype, m, k, rng, poisoned):
    x = x_host(activations(rng, m, k), dtype)
    assert_same(quantize(backend, x, group, layout), want_bytes(f32_of(x, dtype), layout))


@needs_device
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("group", list(GROUPS))
@pytest.mark.parametrize("layout", ["blocks", "planes"])
def test_nan_wins_its_block(backend, group, layout, rng, poisoned):
    x = activations(rng, 3, 256)
    nan_at = {1 * 8 + 1: 0, 1 * 8 + 3: 31, 2 * 8 + 5: 17, 2 * 8 + 6: 8}  # block -> element: lanes 0, last, ...
    for blk, e in nan_at.items():
        x.reshape(-1, 32)[blk, e] = np.nan
    x.reshape(-1, 32)[2 * 8 + 7, [3, 20]] = np.nan  # two in one block
    got = quantize(backend, x, group, "blocks").reshape(-1, ACT.block_bytes)
    want = want_bytes(x, "blocks").reshape(-1, ACT.block_bytes)
    nan_blocks = sorted([*nan_at, 2 * 8 + 7])
    qs = ACT.offsets["qs"]
    assert np.array_equal(got[:, qs:], want[:, qs:]) and not got[nan_blocks, qs:].any()
    keep = np.setdiff1d(np.arange(len(got)), nan_blocks)
    assert np.array_equal(got[keep], want[keep])
    for field in ("d", "s"):
        at = ACT.offsets[field]
        assert np.isnan(np.ascontiguousarray(got[nan_blocks, at : at + 2]).view("<f2")).all(), field
    if layout == "planes":  # the planes kernel: the same bytes, regrouped (NaN payloads aside)
        planes = quantize(backend, x, group, "planes")
        blocks = reference.from_planes(ACT, planes).reshape(-1, ACT.block_bytes)
        assert np.array_equal(blocks[keep], want[keep]) and not blocks[nan_blocks, qs:].any()


@needs_device
@pytest.mark.parametrize("group", ["sg16", "tree"])
@pytest.mark.parametrize(
    "mutation",
    [("[lane + 16u * j]", "[lane * 2u + j]"), ("[lane + 32u * j]", "[(lane + 1u) % 32u + 32u * j]"),
     ("e0 = (size_t)b * 32u + lane;", "e0 = (size_t)b * 32u + lane / 2u;"), ("lid / ", "lid / 2u / ")],
    ids=["store-16", "store-32", "load", "block"],
)  # fmt: skip
def test_broken_lane_index_fails(group, mutation, rng):
    lanes = 16 if group == "sg16" else 32
    if f"{lanes}u * j]" not in mutation[0] and mutation[0].startswith("["):
        pytest.skip(f"a {lanes}-lane mutation")
    x = activations(rng, 3, 96)
    got = quantize(BACKENDS[0], x, group, mutate=lambda s: s.replace(*mutation))
    assert not np.array_equal(got, want_bytes(x, "blocks"))


def test_nvcc_builds_it_for_sm90():
    from qkgen.backends.cuda_toolchain import NVCC_FLAGS, find_nvcc, nvcc_compile

    if find_nvcc() is None:
        pytest.skip("nvcc not found")
    for dtype in ("f32", "f16", "bf16"):
        for layout in ("blocks", "planes"):
            ks = render("quantize_q8_1", ACT, "cuda-sm90", dtype=dtype, lane_group=True, layout=layout)
            assert nvcc_compile(ks.source, "sm_90", NVCC_FLAGS, name=ks.name)


@needs_device
def test_runtime_takes_it_where_paths_say(monkeypatch, rng):
    backend = BACKENDS[0]
    x = activations(rng, 1, 4096).astype(np.float16)
    w = rng.standard_normal((64, 4096)).astype(np.float32)
    qt = qkgen.quantize(w, "q4_0")
    (quant, _), _ = gemv_plans(qt, x, "int8dot", backend)
    assert "lane_group" not in quant.ks.name  # off by default
    y_off = qkgen.gemv(qt, x, path="int8dot", backend=backend)
    monkeypatch.setattr(paths, "INT8DOT_LANE_GROUP", frozenset({backend}))
    (quant, _), _ = gemv_plans(qt, x, "int8dot", backend)
    assert quant.ks.name.endswith("_lane_group1")
    assert_same(quantize_q8_1_device(x, backend=backend), reference.quantize(x.astype(np.float32), "q8_1").data)
    qt = qkgen.quantize(w, "q4_0")  # a fresh weight: no plans kept from the call above
    assert np.array_equal(qkgen.gemv(qt, x, path="int8dot", backend=backend), y_off)


@needs_device
def test_subgroup_max_alone_drops_the_nan(rng):
    # without the NaN sum, Intel's sub-group maximum drops the NaN: d finite, codes nonzero
    x = activations(rng, 1, 64)
    x[0, 3] = np.nan
    got = quantize(BACKENDS[0], x, "sg16", mutate=lambda s: s.replace("amax += nanv;", ""))
    assert np.isfinite(got[:2].view("<f2")).all() and got[ACT.offsets["qs"] : ACT.block_bytes].any()
