"""Tier 2: the mma GEMV path (W decoded to f16, warp matrix products) for every format x variant x
M (f16, bf16 and f32 x) on every OpenCL device here, where the product goes through local memory (no mma
instruction), against the float64 product of x and the dequantized weight, both rounded to the
16-bit product type (x's; f16 for f32 x). The CUDA form, with
PTX mma, runs in the GPU suite (tests/gpu/test_gemv_mma_gpu.py).

N = 67 is not a multiple of the 16 rows a warp takes, and K is 3 chunks of 32 (not a multiple of
the 4 chunks of a step), so both tails run.
"""

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.backends import get
from qkgen.errors import QKGenValueError
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render
from qkgen.tools import check
from qkgen.tools.catalog import variants

from .matrix import spread
from .test_gemv import _variant_id

opencl = get("opencl")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")


# Each variant on one device, the devices taking turns within a format (tests/matrix.py), at M = 1, 3
# and 8; f32 x rounded by round_to_f16 first at M = 3 only (it adds a launch, not a product form).
VARIANT_DEVICES = [pytest.param(v, d, m, id=f"{_variant_id(v)}-{d}-{m}")
                   for v, d in spread(variants("gemv_mma"), DEVICES, lambda v: v["format"])
                   for m in ((3,) if v.get("x_rounded") else (1, 3, 8))]  # fmt: skip


@needs_opencl
@pytest.mark.parametrize("v, device, m", VARIANT_DEVICES)
def test_gemv_mma_matches_rounded_weight_product(v, device, m, rng, poisoned):
    qt = check.gemv_sample(F.get(v["format"]), rng, v, op="gemv_mma")
    x = check.gemv_x(rng, m, qt.shape[1], v["dtype"])
    if v.get("x_rounded"):  # f32 x rounded by round_to_f16 first: bit for bit the one-kernel form's y
        y = check.gemv_round_x(qt, x, True, "opencl", device)
        assert np.array_equal(y.view(np.uint32), check.gemv_round_x(qt, x, False, "opencl", device).view(np.uint32))
    else:
        y = qkgen.gemv(qt, x, path="mma", backend="opencl", device=device)
    assert y.shape == (m, check.GEMV_ROWS)
    err, bound = check.gemv_error(y, x, qt, v["dtype"], rounded=True)
    assert not (err > bound).any(), f"{(err > bound).sum()} of {err.size} outside the bound"


def _run(op: str, qt, x, inputs: dict, **params):
    """y [M, N] (f16 x) from one launch of a plan of `op` rendered with `params`, on the first OpenCL
    device; inputs: the activations' launch values. Returns (y as float64, the kernel source)."""
    from qkgen.runtime.plan import Plan

    dev = qkgen.backends.open_device("opencl", DEVICES[0])
    plan = Plan.make(dev, op, qt.format, dtype="f16", **params)
    (n, k), m = qt.shape, x.shape[0]
    sizes = {"N": n, "K": k, "M": m}
    (buf, arr, _), = plan.outputs(sizes).values()
    plan.launch({"data": qt.data, "y": buf, **inputs}, sizes)
    return dev.download(arr, "f16", m * n).reshape(m, n).astype(np.float64), plan.ks.source


@needs_opencl
@pytest.mark.parametrize("tiles, wg", [(2, 64), (3, 128), (4, 32)])
def test_gemv_mma_tiles_and_warps(tiles, wg, rng, poisoned):
    """Other tilings compute the same product (several tiles a warp, fewer or more warps)."""
    qt = qkgen.quantize(rng.standard_normal((70, 8 * 32 + 32)).astype(np.float32), "q4_1")
    x = check.gemv_x(rng, 5, qt.shape[1], "f16")
    y, _ = _run("gemv_mma", qt, x, {"x": x}, tiles=tiles, wg=wg)
    err, bound = check.gemv_error(y, x, qt, "f16", rounded=True)
    assert not (err > bound).any()


def test_cuda_form_uses_the_mma_instruction_and_others_local_memory():
    cuda = render("gemv_mma", "nf4", "cuda-sm90", dtype="f16", blocksize=64, nested=True).source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in cuda and "frag[" not in cuda
    ocl = render("gemv_mma", "nf4", "opencl-intel-gpu", dtype="f16", blocksize=64, nested=True).source
    assert "mma.sync" not in ocl and "frag[lid * 6u]" in ocl


def test_round_x_refusals_and_names():
    """x_rounded is f32 x's alone, and named in the kernel; round_x only on the mma path with f32 x."""
    name = render("gemv_mma", "nf4", "cuda-sm90", dtype="f32", x_rounded=True).name
    assert "x_rounded1" in name and "x_rounded" not in render("gemv_mma", "nf4", "cuda-sm90", dtype="f32").name
    with pytest.raises(QKGenValueError, match="x_rounded: True with dtype f16; allowed: True only with dtype f32"):
        render("gemv_mma", "nf4", "cuda-sm90", dtype="f16", x_rounded=True)
    qt = qkgen.quantize(np.linspace(-1, 1, 4 * 64, dtype=np.float32).reshape(4, 64), "nf4")
    from qkgen.runtime.api import gemv_plans

    x16 = np.ones((2, 64), np.float16)
    with pytest.raises(QKGenValueError, match="round_x: True with path 'mma' and f16 x; allowed: True only on"):
        gemv_plans(qt, x16, "mma", backend="opencl", round_x=True)
    with pytest.raises(QKGenValueError, match="round_x: True with path 'float'"):
        gemv_plans(qt, x16.astype(np.float32), "float", backend="opencl", round_x=True)
    with pytest.raises(QKGenValueError, match="round_x: 1; allowed: None, True or False"):
        gemv_plans(qt, x16.astype(np.float32), "mma", backend="opencl", round_x=1)
    with pytest.raises(QKGenValueError, match="round_x: True with path 'mma' and f16 x"):
        qkgen.gemv(qt, x16, path="mma", backend="opencl", round_x=True)


def test_round_x_past_its_32_bit_count(monkeypatch):
    """round_to_f16 counts x's values in 32 bits: past that, asked for, a clear error; by default the
    one-kernel form (shown with the limit lowered to 100 values)."""
    import qkgen.runtime.api as api

    monkeypatch.setattr(api, "ROUND_MAX_VALUES", 100)
    monkeypatch.setattr(api, "default_round_x", lambda *a: True)
    qt = qkgen.quantize(np.linspace(-1, 1, 4 * 64, dtype=np.float32).reshape(4, 64), "nf4")
    x = np.ones((2, 64), np.float32)
    with pytest.raises(QKGenValueError, match=r"round_x: True with x \[2, 64\]; allowed: M \* K <= 100"):
        api.gemv_plans(qt, x, "mma", backend="opencl", round_x=True)
    assert [p.ks.op for p in api.gemv_plans(qt, x, "mma", backend="opencl")[0]] == ["gemv_mma"]
    assert [p.ks.op for p in api.gemv_plans(qt, x[:1], "mma", backend="opencl")[0]] == ["round_to_f16", "gemv_mma"]


@needs_opencl
def test_public_round_x_gives_the_same_y_and_is_its_own_warm_call(rng, poisoned):
    """qkgen.gemv(round_x=...): both forms bit for bit alike, each bound once (the warm-call key
    holds round_x), two launches only where asked."""
    qt = qkgen.quantize(rng.standard_normal((40, 128)).astype(np.float32), "nf4", nested=True)
    x = rng.standard_normal((3, 128)).astype(np.float32)
    ys = {r: qkgen.gemv(qt, x, path="mma", backend="opencl", device=DEVICES[0], round_x=r) for r in (True, False)}
    assert np.array_equal(ys[True].view(np.uint32), ys[False].view(np.uint32))
    again = qkgen.gemv(qt, x, path="mma", backend="opencl", device=DEVICES[0], round_x=True)
    assert np.array_equal(again.view(np.uint32), ys[True].view(np.uint32))
    launches = sorted(len(b.steps) for b in qt.__dict__[qkgen.runtime.api._CALLS].values())
    assert launches == [1, 2]


def test_formats_and_refusals():
    taken = set(get_op("gemv_mma").formats())
    assert {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "nf4", "fp4", "blockwise8", "int4", "int8"} <= taken
    assert not taken & {"q4_k", "q6_k", "mxfp4", "q2_k"}  # sub-block scales: not this decode
    f32 = render("gemv_mma", "q4_0", "cuda-sm90", dtype="f32").source  # x rounded to f16 on load
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in f32 and "xw[p] = qk_pack_f16x2(lo, hi);" in f32
    assert "qk_hmul2" in f32  # the f16 pair decode serves f32 x too
    with pytest.raises(QKGenValueError, match="allowed: f16, bf16, f32"):
        render("gemv_mma", "q4_0", "cuda-sm90", dtype="u8")
    bf16 = render("gemv_mma", "q4_0", "cuda-sm90", dtype="bf16").source
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in bf16 and "qk_hmul2" not in bf16
    with pytest.raises(QKGenValueError, match="format: gemv_mma does not take q4_k"):
        render("gemv_mma", "q4_k", "cuda-sm90", dtype="f16")


@needs_opencl
@pytest.mark.parametrize("op", ["gemv_mma", "gemv_int8dot"])
@pytest.mark.parametrize("fmt", ["q4_0", "q5_0", "q8_0"])
def test_word_loads_of_two_byte_aligned_blocks(op, fmt, rng, poisoned):
    """word_loads (the CUDA default): a 2-byte aligned block's codes as 4-byte loads from the word
    boundary below, shifted; odd block counts put half the blocks 2 bytes past a word."""
    from qkgen.kernels.ops.int8dot import int8dot_reference
    from qkgen.runtime.api import quantize_q8_1_device

    qt = qkgen.quantize(rng.standard_normal((37, 5 * 32)).astype(np.float32), fmt)
    x = check.gemv_x(rng, 3, qt.shape[1], "f16")
    kw = {"mmax": 8} if op == "gemv_int8dot" else {}
    xin = {"xq": quantize_q8_1_device(x, backend="opencl", device=DEVICES[0])} if op == "gemv_int8dot" else {"x": x}
    y, source = _run(op, qt, x, xin, word_loads=True, **kw)
    assert "w_sh" in source and "word_loads=1" in source
    if op == "gemv_mma":
        err, bound = check.gemv_error(y, x, qt, "f16", rounded=True)
        assert not (err > bound).any()
    else:
        want = int8dot_reference(qt, x.astype(np.float32))
        assert np.allclose(y, want, rtol=2e-3, atol=1e-3)


def test_two_codes_at_a_time_where_the_row_allows():
    """q4_0 and q8_0 decode pairs of codes in f16 arithmetic (the c0.. words); rows with fifth bits
    (q5_0) only when asked (slower there), and rows of f32 scales or tables never."""
    from qkgen.kernels.ops.mma import f16_pairs

    for fmt, on in (("q4_0", True), ("q8_0", True), ("q5_0", False), ("q4_1", False), ("nf4", False)):
        src = render("gemv_mma", fmt, "cuda-sm90", dtype="f16").source
        assert ("qk_hmul2(qk_hsub2(c0 | 0x64006400u" in src) == on, fmt
    assert "uint c15 =" in render("gemv_mma", "q5_0", "cuda-sm90", dtype="f16", pairs=True).source
    assert f16_pairs(F.get("q4_1")) == [] and f16_pairs(F.get("int4")) == []
    # q4_0: byte j holds elements j (low nibble) and j + 16; bits b and b + 16 of a word: bytes 0 and 2
    assert f16_pairs(F.get("q4_0"))[:2] == [(0, 0, 0, 2), (0, 4, 16, 18)]
