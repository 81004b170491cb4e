"""The device quantizer (quantize_stats + quantize, runtime/quantize.py) on the CPU devices here:
every array of the QTensor equals the reference codec's, bit for bit, for every format the op takes,
every statistics layout, every input dtype, on OpenCL and SYCL; outputs are poisoned first.
Odd sizes and tails where the format allows them, ties on midpoints and halves, all-zero blocks,
device arrays in and out, the local-memory reduction of targets without sub-groups, bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.backends import get
from qkgen.formats import mxfp4, reference, subscales
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.quantize import magnitude_search
from qkgen.kernels.ops.table_search import search
from qkgen.runtime.quantize import quantize_device
from qkgen.tools.catalog import variants

ARRAYS = ("data", "absmax", "absmax_q", "absmax2", "scale")
WHERE = [pytest.param(b, marks=pytest.mark.skipif(not get(b).is_available(), reason=f"{b} unavailable"))
         for b in ("opencl", "sycl")]  # fmt: skip
FORMATS = get_op("quantize").formats()
KERNELS = [v for v in variants("quantize") if not v.get("nested")]


def host(x32: np.ndarray, dtype: str) -> np.ndarray:
    return x32 if dtype == "f32" else reference.round_to(x32, dtype)


def assert_same(got: qkgen.QTensor, want: qkgen.QTensor) -> None:
    assert (got.shape, got.blocksize, got.scale_mode, got.offset) == (want.shape, want.blocksize, want.scale_mode,
                                                                       want.offset)  # fmt: skip
    for name in ARRAYS:
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is not None:
            a = a.to_host() if hasattr(a, "to_host") else a.get() if hasattr(a, "get") else np.asarray(a)
            assert a.shape == np.asarray(b).shape, name
            diff = np.count_nonzero(a.reshape(-1).view(np.uint8) != np.asarray(b).reshape(-1).view(np.uint8))
            assert diff == 0, f"{name}: {diff} bytes differ"


def random_x(rng, shape, outliers: int = 3) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[rng.integers(0, x.size, outliers)] *= 8.0
    return x


def shapes(fmt) -> list[tuple[int, ...]]:
    if fmt.inline:  # whole blocks only
        return [(3, 5 * fmt.block), (fmt.block,), (2, 3, 2 * fmt.block)]
    return [(7, 333), (1,), (5, 1), (3, 129), (2, 2, 67)]


def run(x: np.ndarray, fmt, backend: str, dtype: str = "f32", **opts):
    got = quantize_device(host(x, dtype), fmt, backend=backend, **opts)
    want = reference.quantize(reference.host_f32(host(x, dtype), dtype), fmt, **opts)
    assert_same(got, want)
    return got


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("kw", KERNELS, ids=lambda v: "-".join(str(x) for x in v.values() if x is not None))
def test_every_kernel_equals_the_reference(backend, kw, rng, poisoned):
    fmt = F.get(kw["format"])
    opts = {k: kw[k] for k in ("scale_mode", "blocksize") if kw.get(k)}
    for shape in shapes(fmt)[:2]:
        run(random_x(rng, shape), fmt, backend, kw["dtype"], **opts)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", ["nf4", "fp4"])
@pytest.mark.parametrize("blocksize", [32, 64, 4096])
def test_nested_statistics_and_their_offset(backend, name, blocksize, rng, poisoned):
    """absmax_q, absmax2 and the offset (the exact mean of the device absmax: exact_sum, runtime/reduce.py)."""
    run(random_x(rng, (3, 12352 if blocksize < 4096 else 70001 // 7 * 7)), F.get(name), backend, nested=True,
        blocksize=blocksize)  # fmt: skip


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", FORMATS)
def test_odd_sizes_and_tails(backend, name, rng, poisoned):
    fmt = F.get(name)
    modes = fmt.scale_modes or (None,)
    for shape in shapes(fmt):
        for mode in modes:
            opts = {"scale_mode": mode, "group_size": 32} if mode == "group" else {"scale_mode": mode} if mode else {}
            run(random_x(rng, shape, outliers=1), fmt, backend, **opts)
        if fmt.blocksizes[0] < fmt.block and not fmt.scale_modes:
            run(random_x(rng, shape, outliers=1), fmt, backend, blocksize=fmt.blocksizes[0])


@pytest.mark.parametrize("backend", WHERE)
def test_ties_go_where_the_reference_sends_them(backend, poisoned):
    """Values on the midpoints of the 4-bit tables (absmax 1), on blockwise8's cuts and the f32 just
    below each (absmax 1: c is the value), a block of subnormals, halves for rint (int8) and roundf
    (q8_0), and all-zero blocks among others."""
    for name in ("nf4", "fp4"):
        mids = np.asarray(search(F.get(name).table).keys, np.float32)
        x = np.concatenate([[1.0], mids, -mids, np.zeros(64 - 1 - 2 * mids.size)]).astype(np.float32)
        run(np.concatenate([x, np.zeros(64, np.float32), x[:33]]), F.get(name), backend)
    cuts = np.asarray(search(F.get("blockwise8").table, lookup=True).keys, np.float32)
    below = np.nextafter(cuts, np.float32(-2))
    x = np.ones((3, 256), np.float32)
    x[0, 1:], x[1, 1:] = cuts, below
    x[2] = 0  # a subnormal absmax has no f32 inverse: c = x * inf, the zeros' c NaN (code 0)
    x[2, :8] = [1e-39, -5e-40, 0, 3e-40, -1e-39, 2e-45, 0, 7e-40]
    run(x, F.get("blockwise8"), backend)
    halves = np.concatenate([[128.0], np.arange(-20, 20) + 0.5]).astype(np.float32)
    run(halves.reshape(1, -1), F.get("int8"), backend, scale_mode="row")
    q8 = np.concatenate([[127.0], np.arange(-15, 16) + 0.5]).astype(np.float32)
    run(np.concatenate([q8, np.zeros(32, np.float32)]), F.get("q8_0"), backend)
    for name in ("blockwise8", "q4_0", "q4_1", "int4"):
        x = np.zeros((4, 256), np.float32)
        x[1] = np.linspace(-3, 2, 256)
        run(x, F.get(name), backend, **({"scale_mode": "group"} if name == "int4" else {}))


def test_device_arrays_in_and_out(rng, poisoned):
    cla = pytest.importorskip("pyopencl.array")
    if not get("opencl").is_available():
        pytest.skip("no OpenCL")
    from qkgen.runtime.api import _open

    dev = _open("opencl", None)
    x = random_x(rng, (5, 333))
    xd = cla.to_device(dev.queue, x)
    got = quantize_device(xd, "nf4", backend="opencl", nested=True)
    assert isinstance(got.data, cla.Array) and isinstance(got.absmax2, cla.Array)
    assert_same(got, reference.quantize(x, "nf4", nested=True))
    half = cla.to_device(dev.queue, x.astype(np.float16))
    got = quantize_device(half, "int4", backend="opencl", scale_mode="group")
    assert isinstance(got.scale, cla.Array) and got.scale.shape == (5, 3)
    assert_same(got, reference.quantize(x.astype(np.float16), "int4", scale_mode="group"))
    got = quantize_device(cla.to_device(dev.queue, x[:, :320].copy()), "q4_1", backend="opencl")
    assert_same(got, reference.quantize(x[:, :320], "q4_1"))
    x[2, 7] = np.inf
    with pytest.raises(qkgen.QKGenValueError, match=r"x: inf at index \(2, 7\) is not finite"):
        quantize_device(cla.to_device(dev.queue, x), "nf4", backend="opencl")


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name, tiles", [("blockwise8", 8), ("blockwise8", 3), ("nf4", 3), ("fp4", 2)])
def test_blockwise_tiles_and_their_tails(backend, name, tiles, rng, poisoned, monkeypatch):
    """quantize_blockwise's tiles a work-group (the log buckets' table copied once for them), for sizes
    that end in a work-group's first tile, midway through its tiles inside a block, on a tile's edge and
    in the last tile."""
    from qkgen.runtime import quantize as rq

    asked = []
    monkeypatch.setattr(rq, "blockwise_knobs", lambda *args: asked.append(args) or {"tiles": tiles})
    span = 256 * 16  # the op's default work-group of 256 work-items, 16 elements each
    for n in (2 * tiles * span + 300, (tiles + 1) * span + span // 2 + 37, tiles * span, tiles * span - 5):
        run(random_x(rng, (n,)), F.get(name), backend)
    assert asked  # the calls' plans asked for the tiles, and the kernel loops over them
    assert f"tile < {tiles}u" in qkgen.render("quantize_blockwise", name, "sycl-cpu", tiles=tiles).source


@pytest.mark.parametrize("backend", WHERE)
def test_targets_without_subgroups_reduce_in_local_memory(backend, rng, poisoned):
    """The same device, its target without sub-groups: the stats kernels take the local-memory tree."""
    from qkgen.runtime.api import _open

    dev = _open(backend, None)
    before = dev.info.target
    dev.info.target = dataclasses.replace(before, name=before.name + "-nosg", subgroup_size=0)
    try:
        for name, opts in (("nf4", {"nested": True}), ("int8", {"scale_mode": "tensor"}), ("int2", {})):
            run(random_x(rng, (3, 333)), F.get(name), backend, **opts)
        # blockwise8's absmax by the tree, its barriers inside the tiles' loop, its scratch used again
        run(random_x(rng, (5, 4 * 4096 + 77)), F.get("blockwise8"), backend)
        assert "scratch[lid]" in qkgen.kernels.render.render("quantize_stats", "nf4", dev.info.target).source
        assert "scratch[lid]" in qkgen.render("quantize_blockwise", "blockwise8", dev.info.target).source
    finally:
        dev.info.target = before


@pytest.mark.parametrize("profile, name, blocksize, spelled", [
    ("cuda-sm90", "blockwise8", 256, "__shfl_xor_sync("), ("opencl-nvidia-sm90", "nf4", 64, "qk_shfl_xor("),
    ("sycl-cpu", "nf4", 64, "sycl::permute_group_by_xor("), ("sycl-cpu", "blockwise8", 256, "sycl::reduce_over_group("),
    ("opencl-intel-cpu", "blockwise8", 256, "sub_group_reduce_max("),
    ("opencl-intel-cpu", "nf4", 64, "intel_sub_group_shuffle_xor("),
    ("pocl", "blockwise8", 256, "scratch[lid]"),
])  # fmt: skip
def test_blockwise_absmax_where_each_target_takes_it(profile, name, blocksize, spelled):
    """quantize_blockwise's absmax: the sub-group's maximum where the block's row is the sub-group,
    butterfly shuffles where it is a slice of one and the dialect spells them, the local tree elsewhere
    (the numeric tests above run the CPU targets' kernels)."""
    src = qkgen.render("quantize_blockwise", name, profile, dtype="f32", blocksize=blocksize).source
    assert spelled in src
    assert ("scratch[lid]" in src) == (spelled == "scratch[lid]")


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", ["blockwise8", "nf4", "fp4"])
def test_blockwise_extreme_absmax(backend, name, rng, poisoned):
    """Blocks whose absmax is near the largest f32 (an inverse below 2^-126), 2^-127 and 2^-149
    (subnormal; 2^-128 or less has an infinite inverse), zero, and a value that is not finite
    (refused, naming it: the kernel's search stays within its table)."""
    x = random_x(rng, (6, 256))
    x[0] *= np.float32(3e38) / np.abs(x[0]).max()
    x[1] *= np.float32(2.0**-127) / np.abs(x[1]).max()
    x[2, :] = 0
    x[2, 5] = np.float32(2.0**-149)
    x[3] = 0
    x[4, ::3] = -np.float32(2.0**-140)
    run(x, F.get(name), backend)
    for bad in (np.inf, np.nan):
        y = x.copy()
        y[5, 7] = bad
        with pytest.raises(qkgen.QKGenValueError, match=r"x: .* at index \(5, 7\) is not finite"):
            quantize_device(y, name, backend=backend)


def test_bad_input_is_refused_before_any_launch(rng):
    x = random_x(rng, (4, 64))
    cases = [
        (dict(format="nf4", blocksize=48), r"blocksize: 48 is not allowed for nf4"),
        (dict(format="int4", scale_mode="col"), r"scale_mode: 'col'; allowed: tensor, row, group"),
        (dict(format="q4_0", group_size=32), r"group_size: only for plain integer formats"),
        (dict(format="q8_0", nested=True), r"nested: q8_0 has no nested statistics"),
        (dict(format="int1"), r"format: quantize does not take int1; allowed: nf4"),
        (dict(format="nf4", allow_nonfinite=True), r"allow_nonfinite: the device quantizer takes finite input"),
        (dict(format="nf4", bogus=1), r"opts: unknown option\(s\) \['bogus'\]"),
    ]
    for kw, msg in cases:
        with pytest.raises((qkgen.QKGenValueError, F.FormatError), match=msg):
            quantize_device(x, backend="opencl", **kw)
    with pytest.raises(qkgen.QKGenValueError, match=r"x: 40 elements; q4_0 needs a multiple of 32"):
        quantize_device(np.ones(40, np.float32), "q4_0", backend="opencl")
    with pytest.raises(qkgen.QKGenValueError, match=r"x: 320 elements; q4_k needs a multiple of 256"):
        quantize_device(np.ones(320, np.float32), "q4_K", backend="opencl")
    with pytest.raises(qkgen.QKGenValueError, match=r"x: shape \(0,\)"):
        quantize_device(np.ones(0, np.float32), "nf4", backend="opencl")
    bad = x.copy()
    bad[3, 5] = np.nan
    with pytest.raises(qkgen.QKGenValueError, match=r"x: nan at index \(3, 5\) is not finite"):
        quantize_device(bad, "q4_1", backend="opencl")
    big = np.full((1, 32), 1e6, np.float32)
    big[0, 0] = 1e7  # d = 1e7 / 127 is above 65504, the largest f16
    with pytest.raises(qkgen.QKGenValueError, match=r"overflows q8_0's storage"):
        quantize_device(big, "q8_0", backend="opencl")


def test_the_catalog_lists_the_quantizers():
    names = {v["format"] for v in variants("quantize")}
    assert names == set(FORMATS) and "int1" not in names and "nf4" in names and "q5_1" in names
    assert {"q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "mxfp4", "nvfp4"} <= names
    nested = [v for v in variants("quantize_stats") if v.get("nested")]
    assert nested and all(v["dtype"] == "f32" for v in nested)
    assert set(get_op("quantize_stats").formats()) == {f for f in FORMATS if not F.get(f).inline}


SUB_BLOCK_ROWS = ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "mxfp4", "nvfp4"]


def edge_blocks(fmt, rng) -> np.ndarray:
    """Blocks that take the rules' rare branches: all zero, one zero sub-block, non-negative only (K-quant
    mins of 0), a flat sub-block, near-zero (q6_k's all-zero bytes, below 1e-15), tiny and subnormal
    magnitudes (E8M0 / UE4M3 below the normal range), values just below powers of two (float32 log2
    rounding up), large magnitudes, and a sub-block of one outlier."""
    n, sub = fmt.block, fmt.sub_block or fmt.block
    below = np.float32(2.0) ** rng.integers(-20, 12, n).astype(np.float32)
    rows = [np.zeros(n), np.where(np.arange(n) < sub, 0.0, rng.standard_normal(n)), np.abs(rng.standard_normal(n)),
            np.where(np.arange(n) < sub, -1.5, rng.standard_normal(n)), rng.standard_normal(n) * 1e-16,
            rng.standard_normal(n) * 1e-38, rng.standard_normal(n) * 1e-41, np.nextafter(below, np.float32(0)),
            rng.standard_normal(n) * 3e4, np.where(np.arange(n) == 3, 50.0, rng.standard_normal(n) * 1e-3)]
    return np.stack(rows).astype(np.float32)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", SUB_BLOCK_ROWS)
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_sub_block_rows_equal_the_reference(backend, name, dtype, rng, poisoned):
    """K-quants (llama.cpp's searches, operation by operation), Q8_K and the FP4 rows: every byte of
    every block (codes, d / dmin, sub-block scales, bsums) as the reference codec writes it."""
    fmt = F.get(name)
    run(random_x(rng, (5, 3 * fmt.block), outliers=4), fmt, backend, dtype)
    run(random_x(rng, (3, fmt.block)), fmt, backend, dtype)
    if dtype == "f32":  # f16 / bf16 flush the tiny rows
        run(edge_blocks(fmt, rng), fmt, backend)


@pytest.mark.parametrize("backend", WHERE)
def test_mxfp4_scale_is_numpys_float32_log2(backend, poisoned):
    """gguf-py's E8M0 exponent floor(log2(amax)) in float32 rounds up just below a power of two
    (2^e (2 - k 2^-23) for small k, more of them the larger |e| is): every such amax from 2^-126 to 2^127."""
    e = np.arange(-126, 127)
    k = np.arange(1, 100)
    sig = (0x1000000 - k[None, :]) << 0  # 24-bit significands just below 2^24
    bits = ((e[:, None] + 127) << 23) + (sig - 0x800000)
    amax = bits.astype(np.uint32).view(np.float32).reshape(-1)
    x = np.zeros((amax.size, 32), np.float32)
    x[:, 5] = amax
    x[:, 6] = -amax / 3
    run(x, F.get("mxfp4"), backend)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k"])
def test_k_quant_searches_after_the_last_full_vector(backend, name, seed, poisoned):
    """Intel's CPU runtime runs the work-items after the last full 16-wide vector through scalar
    code; for SYCL it split the searches' running sums into partial sums there (dialect acc_rn).
    15 blocks: all of them such work-items; 17: one. Inputs in f32, f16 and bf16, large values."""
    rng = np.random.default_rng(seed)
    fmt = F.get(name)
    for n in (15, 17):
        x = random_x(rng, (n, fmt.block), outliers=6)
        for dtype in ("f32", "f16", "bf16"):
            run(x, fmt, backend, dtype)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k"])
def test_k_quant_search_codes_where_the_scale_rounds_to_zero(backend, name, rng, poisoned):
    """A sub-block whose stored scale rounds to 0 keeps the codes of its search (the kernels make
    them again from the kept trial's scale): one large sub-block a block, the others a million times
    smaller, so their 4- to 8-bit scales are 0 and every code comes from the search, the trials at
    both ends of the range among them (q6_k's -(32 + 0.9) rounds to -33, clamped to -32)."""
    fmt = F.get(name)
    sub = fmt.sub_block
    x = rng.standard_normal((64, fmt.block)).astype(np.float32) * np.float32(1e-6)
    x[:, :sub] = rng.standard_normal((64, sub)) * 4
    run(x, fmt, backend)


def _quantize_with_lanes(backend, fmt, x, dtype, lanes, wg):
    """The quantize kernel alone with `lanes` work-items a block: its block bytes and flags."""
    from qkgen.backends import open_device
    from qkgen.runtime.plan import Plan

    dev = open_device(backend, 0)
    plan = Plan.make(dev, "quantize", fmt, dtype=dtype, lanes=lanes, wg=wg)
    nb = x.size // fmt.block
    sizes = {"nblocks": nb, "code_bytes": nb * fmt.block_bytes}
    outs = plan.outputs(sizes)
    plan.launch({"x": host(x, dtype), **{k: buf for k, (buf, _, _) in outs.items()}}, sizes)
    got = dev.download(outs["data"][1], "u8", sizes["code_bytes"])
    return got, dev.download(outs["status"][1], "u32", 2)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_k_quant_search_lanes(backend, name, dtype, rng, poisoned):
    """`lanes` work-items a block (sub-blocks searched side by side; the block's scales and codes meet
    in local memory): every byte as the reference writes it, with two sub-blocks a work-item and one,
    with block counts that leave the last work-group part empty (its work-items reach the barriers
    and store nothing), large values, and for f32 the edge blocks (zeros, tiny, huge, one outlier)."""
    fmt = F.get(name)
    nsub = fmt.sub_count
    rows = [random_x(rng, (7, fmt.block), outliers=5)]
    if dtype == "f32":
        rows.append(edge_blocks(fmt, rng))
    x = np.concatenate(rows).astype(np.float32)
    want = reference.quantize(reference.host_f32(host(x, dtype), dtype), fmt)
    for lanes, wg in ((2, 64), (nsub, 16)):  # several sub-blocks a work-item; one each, 1-2 blocks a work-group
        got, flags = _quantize_with_lanes(backend, fmt, x, dtype, lanes, wg)
        diff = np.count_nonzero(got != np.asarray(want.data).reshape(-1))
        assert diff == 0, f"lanes {lanes}, wg {wg}: {diff} bytes differ"
        assert not flags.any(), (lanes, wg, flags)


@pytest.mark.parametrize("backend", WHERE)
def test_k_quant_search_lanes_flags_a_non_finite_value(backend, poisoned):
    """A NaN in one sub-block with lanes: the flag is set (the host then names the value), as with one
    work-item a block."""
    fmt = F.get("q4_k")
    x = np.ones((3, fmt.block), np.float32)
    x[1, 77] = np.nan
    _, flags = _quantize_with_lanes(backend, fmt, x, "f32", 8, 64)
    assert flags[0] == 1


def test_k_quant_lanes_must_divide_the_sub_blocks():
    with pytest.raises(qkgen.QKGenValueError, match="lanes: 3; allowed: a divisor of 8"):
        qkgen.render("quantize", "q4_k", "opencl", lanes=3)


def test_cuda_takes_the_measured_lanes():
    """runtime.quantize_knobs' lanes for the K-quant searches on CUDA: a divisor of each row's sub-blocks (the
    kernel renders, its name says it); other kinds of device keep the op's default of one."""
    from qkgen.kernels.target import get_target
    from qkgen.runtime import quantize_knobs

    cuda, cpu = get_target("cuda-sm90"), get_target("opencl-intel-cpu")
    for name in ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k"):
        fmt = F.get(name)
        knobs = quantize_knobs.quantize_knobs(cuda, fmt)
        assert knobs["lanes"] > 1 and fmt.sub_count % knobs["lanes"] == 0, (name, knobs)
        assert f"lanes{knobs['lanes']}" in qkgen.render("quantize", name, cuda, **knobs).name
        assert quantize_knobs.quantize_knobs(cpu, fmt) == {}
    assert quantize_knobs.quantize_knobs(cuda, F.get("q4_0")) == {}


def test_cuda_takes_the_measured_blockwise_knobs():
    """runtime.quantize_knobs' elements a work-item for nf4 on CUDA with 16-bit x (32): where the
    blocksize takes them, the kernel renders with them and its name says so; f32 x, other kinds of
    device and fp4 keep the op's default (4 tiles, for its larger table); blockwise8 with 16-bit x takes
    a register budget (min_groups 8), with f32 x the default."""
    from qkgen.kernels.target import get_target
    from qkgen.runtime import quantize_knobs

    cuda, cpu = get_target("cuda-sm90"), get_target("opencl-intel-cpu")
    for name in ("nf4", "fp4"):
        fmt = F.get(name)
        for dtype in ("f16", "bf16"):
            knobs = quantize_knobs.blockwise_knobs(cuda, fmt, dtype, 64)
            assert knobs == ({"per_lane": 32} if name == "nf4" else {}), (name, dtype)
            ks = qkgen.render("quantize_blockwise", name, cuda, dtype=dtype, blocksize=64, **knobs)
            assert ks.name.endswith("_per_lane32") == (name == "nf4"), ks.name
            assert ks.param("tiles") == (4 if name == "fp4" else 1), ks.params
            assert quantize_knobs.blockwise_knobs(cpu, fmt, dtype, 64) == {}
        assert quantize_knobs.blockwise_knobs(cuda, fmt, "f32", 64) == {}
    for dtype in ("f16", "bf16"):  # blockwise8: a register budget
        knobs = quantize_knobs.blockwise_knobs(cuda, F.get("blockwise8"), dtype, 256)
        assert knobs == {"min_groups": 8}
        src = qkgen.render("quantize_blockwise", "blockwise8", cuda, dtype=dtype, blocksize=256, **knobs).source
        assert "__launch_bounds__(256, 8)" in src
    assert quantize_knobs.blockwise_knobs(cuda, F.get("blockwise8"), "f32", 256) == {}
    for arch in ("cuda-sm86", "cuda-sm120"):  # 1536 threads an SM: 8 work-groups of 256 do not fit
        assert quantize_knobs.blockwise_knobs(get_target(arch), F.get("blockwise8"), "f16", 256) == {}
    assert quantize_knobs.blockwise_knobs(cuda, F.get("nf4"), "f16", 16) == {}  # 32 does not divide 16


def test_blockwise_calls_take_the_knobs(monkeypatch):
    """The public call's plan (runtime.quantize._plans) asks for runtime.quantize_knobs' knobs: per_lane 32 for
    nf4 with f16 x on a CUDA target, none with f32 x."""
    from qkgen.kernels.target import get_target
    from qkgen.runtime import quantize as rq

    asked = []
    monkeypatch.setattr(rq.Plan, "make", classmethod(lambda cls, dev, op, fmt, **kw: asked.append((op, kw))))
    dev = type("Dev", (), {"target": get_target("cuda-sm90")})()
    probe = qkgen.quantize(np.ones((2, 64), np.float32), "nf4", blocksize=64)
    rq._plans(dev, F.get("nf4"), probe, "f16")
    rq._plans(dev, F.get("nf4"), probe, "f32")
    assert asked == [("quantize_blockwise", dict(dtype="f16", blocksize=64, scale_mode=None, per_lane=32)),
                     ("quantize_blockwise", dict(dtype="f32", blocksize=64, scale_mode=None))]


@pytest.mark.parametrize("backend", WHERE)
def test_q6_k_seeded_block(backend, poisoned):
    """One q6_k block from a seeded random run, with a few large values, that the SYCL build once
    quantized to another sub-block scale than the reference (a reassociated sum, see above)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 256 * 6)).astype(np.float32)
    x.flat[rng.integers(0, x.size, 5)] *= 8
    block = x[5, 5 * 256 : 6 * 256].reshape(1, 256)
    run(block, F.get("q6_k"), backend)


@pytest.mark.parametrize("name,opts", [("q4_0", {}), ("q5_1", {}), ("q8_0", {}), ("mxfp4", {}), ("q4_k", {}),
                                       ("nf4", {}), ("fp4", {"blocksize": 32}), ("blockwise8", {}),
                                       ("int4", {"scale_mode": "row"}), ("int8", {"scale_mode": "group"})])
def test_warm_device_calls_equal_the_reference(name, opts, rng, poisoned):
    """Device arrays in: the bound path (its first call, then the lean one) gives the reference's
    bytes, refuses a non-finite value on a warm call and reports an f16 overflow."""
    cla = pytest.importorskip("pyopencl.array")
    if not get("opencl").is_available():
        pytest.skip("no OpenCL")
    from qkgen.runtime.api import _open

    dev = _open("opencl", None)
    fmt = F.get(name)
    x = random_x(rng, (3, 4 * 256))
    for dtype in ("f32", "f16"):
        xh = host(x, dtype).astype(np.float16) if dtype == "f16" else x
        for _ in range(2):
            got = quantize_device(cla.to_device(dev.queue, xh), fmt, backend="opencl", **opts)
            assert isinstance(got.data, cla.Array)
            assert_same(got, reference.quantize(reference.host_f32(xh, dtype), fmt, **opts))
    bad = x.copy()
    bad[1, 77] = -np.inf
    with pytest.raises(qkgen.QKGenValueError, match=r"x: -inf at index \(1, 77\) is not finite"):
        quantize_device(cla.to_device(dev.queue, bad), fmt, backend="opencl", **opts)
    if fmt.inline and fmt.has_field("d") and fmt.member("d").ctype == "f16":
        big = x * np.float32(1e6)  # d above 65504
        with pytest.raises(qkgen.QKGenValueError, match=rf"overflows {name}'s storage"):
            quantize_device(cla.to_device(dev.queue, big), fmt, backend="opencl", **opts)


# ---- FP4 rows (mxfp4, nvfp4): the nearest level from the count of midpoints below |x| ----

FP4_ROWS = ["mxfp4", "nvfp4"]


def fp4_scale(fmt, amax: float) -> np.float32:
    """The sub-block scale the reference codec takes for a sub-block of absmax amax."""
    x = np.zeros((1, fmt.block), np.float32)
    x[0, 0] = amax
    stored = mxfp4.quantize_blocks(fmt, x)[0, fmt.offsets[fmt.scales_field]]
    return np.float32(subscales.decode(fmt.sub_scales, np.asarray([stored], np.uint8))[0][0])


def fp4_corners(fmt, s: np.float32, ulps: int = 3) -> np.ndarray:
    """|x| where the nearest level under scale s is decided narrowly: every level and every midpoint
    between magnitudes, times s, and the `ulps` floats either side of each (finite, >= 0)."""
    with np.errstate(over="ignore"):
        base = np.concatenate([np.abs(fmt.table), magnitude_search(fmt)["mids"]]).astype(np.float32) * s
    out, up, down = [base], base, base
    for _ in range(ulps):
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0))
        out += [up, down]
    x = np.unique(np.concatenate(out))
    return x[np.isfinite(x)]


def fp4_midpoint_rule(fmt, x: np.ndarray, s: np.float32) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's fast rule in numpy: (codes, where it applies: |x| < 2^23 s, finite)."""
    m = magnitude_search(fmt)
    with np.errstate(over="ignore"):
        lim = s * np.float32(2.0 ** m["lim_exp"])
        mids = np.asarray(m["mids"], np.float32) * s
    ax = np.abs(x)
    k = (ax[:, None] > mids[None, :]).sum(axis=1)
    return np.where(np.signbit(x) & (k > 0), m["neg_code"] + k, k), (ax < lim) & np.isfinite(lim)


@pytest.mark.parametrize("name", FP4_ROWS)
def test_fp4_midpoint_count_is_the_references_nearest(name, rng):
    """The argument of ops/quantize.py (magnitude_search), checked in numpy for every scale the row's
    encoding stores: levels and midpoints times s and the floats next to them, random magnitudes up to
    16 s and over the whole float range, both signs, +-0. Where |x| < 2^23 s (finite) the count of
    midpoints below |x| is the reference's code; outside, it is not always (why the kernel walks down
    the magnitudes there)."""
    fmt = F.get(name)
    checked = 0
    for s in np.unique(subscales.decode(fmt.sub_scales, np.arange(256, dtype=np.uint8))[0]):
        with np.errstate(over="ignore"):
            spread = [rng.random(4000) * np.float32(16) * s, np.float32(2.0) ** rng.uniform(-149, 127.9, 4000)]
            a = np.concatenate([fp4_corners(fmt, s), *spread, [0.0]]).astype(np.float32)
        a = a[np.isfinite(a)]
        x = np.concatenate([a, -a]).astype(np.float32)
        got, fast = fp4_midpoint_rule(fmt, x, s)
        want = mxfp4._nearest(x[None, :], np.asarray([s], np.float32))[0]
        assert np.array_equal(got[fast], want[fast]), f"scale {s}: {x[fast][got[fast] != want[fast]][:4]}"
        checked += int(fast.sum())
    assert checked > 100_000
    x = np.asarray([1e12, -1e12, 5.0], np.float32)  # a saturated scale: every distance rounds to 1e12
    assert list(mxfp4._nearest(x[None, :], np.asarray([224.0], np.float32))[0][:2]) == [0, 0]
    assert list(fp4_midpoint_rule(fmt, x, np.float32(224))[1]) == [False, False, True]
    assert list(fp4_midpoint_rule(fmt, x, np.float32(0))[1]) == [False, False, False]  # s = 0: all codes 0


def fp4_corner_x(fmt, rng) -> np.ndarray:
    """Blocks whose sub-blocks each hold one value of magnitude amax (setting the scale) and values at
    and next to that scale's levels and midpoints (fp4_corners) up to amax, random signs, some -0 and
    +0; the rest of a sub-block random up to amax. Scales: for MXFP4 2^(j - 3) from the subnormal
    2^-128, 2^-127 to 2^124 and the wrapped bytes (e = 232..255, subnormal or near-subnormal absmax);
    for NVFP4 every UE4M3 code (absmax 6 times its value: scales that are not powers of two, and the
    subnormal ones), scale 0 (absmax below 6 2^-11) and the saturated 224 under values up to 3e38
    (float32 rounding makes the distances to several levels equal there)."""
    sub = fmt.sub_block
    if fmt.sub_scales == "e8m0_half":
        exps = (-125, -124, -123, -100, -20, -1, 0, 1, 3, 20, 60, 104, 105, 126, 127)  # e = 0, 1, 2, ...
        amaxes = [1.9 * np.float32(2.0) ** j for j in exps]
        amaxes += [1.5 * np.float32(2.0) ** j for j in (-126, -127, -128, -135)]  # e = 255, 254, 253, 246
        amaxes += [np.float32(2.0) ** -149]  # e = 232
    else:
        amaxes = [np.float32(6) * np.float32(2) * subscales.ue4m3_half(np.asarray([u]))[0] for u in range(1, 0x7F)]
        lim = np.float32(224 * 2.0**23)
        amaxes += [np.float32(0.004), np.float32(2688), np.float32(1e6), np.nextafter(lim, np.float32(0)), lim,
                   np.float32(1e12), np.float32(3e38)]  # fmt: skip
    subs = []
    for amax in amaxes:
        amax = np.float32(amax)
        s = fp4_scale(fmt, amax)
        pool = fp4_corners(fmt, s)
        if float(amax) > 16 * float(s):  # a saturated scale: 2^k s far above the levels, and floats next to them
            big = s * np.float32(2.0) ** np.arange(4, 120, dtype=np.float32)
            near = [np.nextafter(big, np.float32(0)), np.nextafter(big, np.float32(np.inf))]
            pool = np.concatenate([pool, big, *near])
        pool = rng.permutation(pool[pool <= amax])
        pool = np.concatenate([pool, [0.0, 0.0]]).astype(np.float32)
        for at in range(0, pool.size, sub - 1):
            chunk = pool[at : at + sub - 1]
            fill = (rng.random(sub - 1 - chunk.size) * amax).astype(np.float32)
            v = np.concatenate([[amax], chunk, fill]).astype(np.float32) * rng.choice(np.float32([-1, 1]), sub)
            subs.append(rng.permutation(v))
    x = np.concatenate(subs)
    if x.size % fmt.block:
        x = np.concatenate([x, random_x(rng, (-x.size) % fmt.block, outliers=0)]).astype(np.float32)
    return x.reshape(-1, fmt.block)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", FP4_ROWS)
def test_fp4_ties_and_rounding_corners(backend, name, rng, poisoned):
    """Every byte as the reference writes it for fp4_corner_x's blocks (both paths of the kernel: the
    count of midpoints, and the walk down the magnitudes where s = 0, |x| >= 2^23 s or 2^23 s is not
    finite), then the same in two full work-groups and one block."""
    fmt = F.get(name)
    x = fp4_corner_x(fmt, rng)
    assert np.count_nonzero(x) > x.size // 2 and np.any(np.signbit(x) & (x == 0))
    run(x, fmt, backend)
    run(np.resize(x, (128, fmt.block)), fmt, backend)
    run(x[-1:], fmt, backend)


def bits16(x: np.ndarray, dtype: str) -> np.ndarray:
    """The f16 or bf16 bits of float32 values x >= 0 rounded toward zero (the kernel's midpoints)."""
    x = np.asarray(x, np.float32)
    if dtype == "bf16":
        return (x.view(np.uint32) >> 16).astype(np.int64)
    with np.errstate(over="ignore"):
        h = x.astype(np.float16)
    h = np.where(h.astype(np.float32) > x, np.nextafter(h, np.float16(0)), h)  # nearest went up: one below
    return np.minimum(h.view(np.uint16).astype(np.int64), 0x7BFF)


def of_bits16(b: np.ndarray, dtype: str) -> np.ndarray:
    b = np.asarray(b, np.int64)
    if dtype == "bf16":
        return (b.astype(np.uint32) << 16).view(np.float32)
    return b.astype(np.uint16).view(np.float16).astype(np.float32)


def fp4_corner_x16(fmt, dtype: str, rng, ulps: int = 2) -> np.ndarray:
    """Blocks of f16 or bf16 values (exact in float32) where the kernel's 16-bit midpoints decide: each
    sub-block one value of magnitude amax (setting the scale s), then the 16-bit values at and `ulps`
    either side of the largest one at or below each level and midpoint times s, up to amax, random
    signs and some -0. amax: for MXFP4 1.9 2^j over the type's range (subnormal scales too), for
    NVFP4 6 times every UE4M3 value that the type holds (scales that are not powers of two)."""
    top = 0x7BFF if dtype == "f16" else 0x7F7F
    if fmt.sub_scales == "e8m0_half":
        lo, hi = (-24, 15) if dtype == "f16" else (-133, 126)
        amaxes = [1.9 * 2.0**j for j in range(lo, hi + 1, 1 if dtype == "f16" else 7)]
    else:
        amaxes = [12 * float(subscales.ue4m3_half(np.asarray([u]))[0]) for u in range(1, 0x7F)]
    subs = []
    for amax in amaxes:
        amax = of_bits16(bits16(np.float32(amax), dtype), dtype)
        if not 0 < amax <= of_bits16(top, dtype):
            continue
        s = fp4_scale(fmt, amax)
        with np.errstate(over="ignore"):
            base = np.concatenate([np.abs(fmt.table), magnitude_search(fmt)["mids"]]).astype(np.float32) * s
        b = bits16(base[np.isfinite(base)], dtype)
        pool = of_bits16(np.unique(np.clip(b[:, None] + np.arange(-ulps, ulps + 1), 0, top)), dtype)
        pool = rng.permutation(pool[pool <= amax])
        for at in range(0, max(pool.size, 1), fmt.sub_block - 1):
            chunk = pool[at : at + fmt.sub_block - 1]
            fill = of_bits16(bits16(rng.random(fmt.sub_block - 1 - chunk.size) * amax, dtype), dtype)
            v = np.concatenate([[amax], chunk, fill]).astype(np.float32) * rng.choice(np.float32([-1, 1]), fmt.sub_block)
            v[rng.random(v.size) < 0.05] = -0.0
            v[0] = amax
            subs.append(rng.permutation(v))
    x = np.concatenate(subs)
    x = np.concatenate([x, np.zeros((-x.size) % fmt.block, np.float32)])
    return x.reshape(-1, fmt.block)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", FP4_ROWS)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_fp4_16bit_x_at_its_midpoints(backend, name, dtype, rng, poisoned):
    """With f16 or bf16 x the kernel compares x's bits with each midpoint times s rounded toward zero to
    the type: every byte as the reference writes it for values at and next to those midpoints."""
    fmt = F.get(name)
    x = fp4_corner_x16(fmt, dtype, rng)
    assert np.array_equal(host(x, dtype).astype(np.float32) if dtype == "f16" else x, x)  # exact in the type
    assert x.shape[0] > 50
    run(x, fmt, backend, dtype)


@pytest.mark.parametrize("backend", WHERE)
@pytest.mark.parametrize("name", FP4_ROWS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_fp4_refuses_values_that_are_not_finite(backend, name, bad, rng):
    x = random_x(rng, (3, 2 * F.get(name).block))
    x[1, 5] = bad
    with pytest.raises(qkgen.QKGenValueError, match=rf"x: {bad} at index \(1, 5\) is not finite"):
        quantize_device(x, name, backend=backend)
