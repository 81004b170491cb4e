"""gemv_int8dot with x_inline (x itself the input, each lane quantizing the q8_1 block it reads as
quantize_q8_1 does): the same codes, d and s, then the same products in the same order, so y is
the two-launch form's bit for bit. On Intel's CPU OpenCL, SYCL and OpenCL rendered without
sub-groups; every block row, f32/f16/bf16 x, M = 1, 3, 8, the row shapes the sweeps try, blocks
with NaN, infinity and zeros in x, poisoned outputs; the forms it refuses; nvcc builds it."""

from __future__ import annotations

import dataclasses

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
from qkgen.kernels.target import get_target
from qkgen.runtime.plan import Plan

from .matrix import one_per_group, spread

LEGACY = [f for f in get_op("gemv_int8dot").formats() if is_block_weight(F.get(f))]  # q4_0 .. q8_0
TARGETS = ["opencl", "sycl", "opencl-no-subgroups"]
N_ROWS = 37  # prime: not a multiple of any work-group's rows


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


def _x(rng, m: int, k: int, dtype: str, specials: bool = False) -> np.ndarray:
    """x [m, k] as the kernel takes it (f32, or the 16-bit type's bits); block 4 of row 0 is ties
    (TIES); specials: block 1 of row 0 all zeros, a NaN in block 2 and an infinity in block 3."""
    x = rng.standard_normal((m, k)).astype(np.float32) * rng.uniform(0.01, 10.0, (m, 1)).astype(np.float32)
    x[0, 128:160] = TIES
    if specials:
        x[0, 32:64] = 0.0
        x[0, 64 + 5 : 65 + 5] = np.nan
        x[0, 96 + 31] = np.inf
    return reference.round_to(x, dtype) if dtype != "f32" else x


# amax 127 makes d = 1 and 1/d = 1: every code below is x itself, the halves exact ties (away from zero)
TIES = np.array([127, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 63.5, -63.5, 0.49999997, -0.49999997,
                 1.4999999, -1.4999999, 2.5000002, 0, -0.0, 3, -3, 100.5, -100.5, 7.5, -7.5, 8.5, -8.5,
                 0.25, -0.75, 125.5, -125.5, 64.5, -127], np.float32)  # fmt: skip


def test_ties_round_away_from_zero_on_the_device(rng):
    """quantize_q8_1 (one work-item a block: q8_1_block.jinja, which x_inline shares) codes the ties
    as the reference does, on every backend here, f32 x (f16 and bf16 hold fewer of these values)."""
    from qkgen.runtime.api import quantize_q8_1_device

    x = np.concatenate([TIES, -TIES[::-1], rng.standard_normal(64).astype(np.float32)])[None, :]
    want = np.asarray(reference.quantize(x, "q8_1").data)
    codes = want.reshape(-1, 36)[0, 4:].view(np.int8)
    assert codes[1] == 1 and codes[2] == -1 and codes[5] == 3 and codes[7] == 127 and codes[11] == 0  # half away
    ran = 0
    for backend in ("opencl", "sycl"):
        if get(backend).is_available():
            got = quantize_q8_1_device(x, backend=backend, lane_group=False)
            assert np.array_equal(np.asarray(got), want), backend
            ran += 1
    if not ran:
        pytest.skip("no OpenCL or SYCL device")


def _y(dev, ks, qt, values: dict, m: int) -> np.ndarray:
    plan = Plan(dev, ks)
    n, k = qt.shape
    sizes = dict(N=n, K=k, M=m)
    ((ybuf, yarr, dt),) = plan.outputs(sizes).values()
    plan.launch({"data": np.asarray(qt.data), **values, "y": ybuf}, sizes)
    return np.asarray(dev.download(yarr, dt, m * n)).reshape(m, n)


def _both(devices, where, name, dtype, m, rng, k=32 * 45, specials=False, **params):
    """(y of the fused kernel, y of gemv_int8dot on the reference codec's q8_1 bytes of the same x)."""
    dev, t = _device(devices, where)
    fmt = F.get(name)
    kw = dict(dtype=dtype, mmax=1 if m == 1 else 8, **params)
    plain, fused = render("gemv_int8dot", fmt, t, **kw), render("gemv_int8dot", fmt, t, x_inline=True, **kw)
    assert fused.name.endswith("x_inline1") and "x_inline=1" in fused.source and "xq" not in fused.source
    dev.compile_many([plain, fused])
    qt = reference.quantize(rng.standard_normal((N_ROWS, k)).astype(np.float32), fmt)
    x = _x(rng, m, k, dtype, specials)
    xq = np.asarray(reference.quantize(reference.host_f32(x, dtype), "q8_1", allow_nonfinite=specials).data)
    return _y(dev, fused, qt, {"x": x}, m), _y(dev, plain, qt, {"xq": xq}, m)


def _cases():
    out = []
    for where in TARGETS:
        dtypes = ("f16", "bf16") if where == "sycl" else ("f32", "f16", "bf16")
        rows = [(name, d) for name in LEGACY for d in dtypes]
        out += [(where, name, d, m) for (name, d), m in spread(rows, (1, 3, 8), lambda r: r[0])]
    return [pytest.param(*c, id="{}-{}-{}-m{}".format(*c)) for c in one_per_group(out, lambda c: c[1:3])]


@pytest.mark.parametrize("where, name, dtype, m", _cases())
def test_x_inline_equals_the_two_launches(where, name, dtype, m, devices, rng, poisoned):
    got, want = _both(devices, where, name, dtype, m, rng)
    assert not np.isnan(reference.host_f32(got, dtype)).any()  # every output written
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("where", TARGETS)
def test_x_inline_nan_infinity_and_zero_blocks(where, devices, rng, poisoned):
    # a NaN or an infinity makes its block's d NaN, so every row's y is NaN in both forms; a zero
    # block codes zeros with d = 0; the NaN places must agree bit for bit
    for name in ("q4_0", "q5_1"):
        got, want = _both(devices, where, name, "f32" if where != "sycl" else "f16", 2, rng, specials=True)
        assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(got[0]).all() and not np.isnan(got[1]).any()
        assert np.array_equal(got[1].view(np.uint8), want[1].view(np.uint8))


# the shapes the sweeps try: more rows a team, fewer slices, wider work-groups, K not a multiple of a team's blocks
SHAPES = [{"rpw": 4}, {"rpw": 8, "slices": 2}, {"rpw": 1, "slices": 1}, {"wg": 256}]


@pytest.mark.parametrize("params, where", spread(SHAPES, TARGETS, lambda p: 0))
def test_x_inline_shapes(params, where, devices, rng, poisoned):
    for name in ("q4_1", "q8_0"):
        got, want = _both(devices, where, name, "f16", 1, rng, k=32 * 131, **params)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("name, params, word", [
    ("q4_k", {}, "^x_inline: True reads x in blocks"),
    ("q4_0", {"layout": "planes"}, "^x_inline: True .* in planes"),
    ("q4_0", {"x_planes": True}, "^x_inline: True .* in planes"),
    ("q4_0", {"stage_x": True}, "^stage_x: True"),
])  # fmt: skip
def test_x_inline_refusals(name, params, word):
    with pytest.raises(QKGenValueError, match=word):
        render("gemv_int8dot", name, "cuda-sm90", dtype="f32", x_inline=True, **params)


def test_default_forms_read_xq():
    for name in LEGACY:
        ks = render("gemv_int8dot", name, "cuda-sm90", dtype="f32")
        assert "xq" in ks.source and "x_inline" not in ks.source and "qk_f32_to_f16" not in ks.source


@pytest.mark.skipif(find_nvcc() is None or "sm_90" not in nvcc_arches(), reason="nvcc for sm_90 not found")
def test_x_inline_compiles_for_sm90_without_warnings():
    from .test_cuda_compile import assert_build_without_warnings

    t = get_target("cuda-sm90")
    assert_build_without_warnings([render("gemv_int8dot", name, t, dtype=dtype, x_inline=True, mmax=mmax, rpw=4)
                                   for name, dtype, mmax in (("q4_0", "f32", 1), ("q5_1", "f16", 8), ("q8_0", "bf16", 1))])
