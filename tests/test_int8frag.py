"""Tier 2: the int8mma path's fragments layout (ops/int8frag.py): the numpy layout against its
definition written out element by element, the repack_fragments kernel byte-equal to it on every
OpenCL and SYCL device here, and gemv_int8frag (the int8mma product reading that layout) within the
f32 bound of the int8dot terms for every format x dtype x M, through the public call. The CUDA form
(PTX mma) runs in the GPU suite (tests/gpu/test_int8mma_gpu.py).

Shapes have row tails (N not a multiple of 16) and block counts that are not whole groups.
"""

import numpy as np
import pytest

import qkgen
import qkgen.runtime.api as api
import qkgen.runtime.paths as paths
from qkgen.backends import get, open_device
from qkgen.kernels.ops import get_op
from qkgen.formats import reference as ref
from qkgen.kernels.ops.int8dot import to_x_fragments, x_frag_row_blocks
from qkgen.kernels.ops.int8frag import frag_planes, frag_words, group_blocks, to_fragments
from qkgen.kernels.render import render
from qkgen.runtime.plan import Plan
from qkgen.tools import check

FORMATS = get_op("gemv_int8frag").formats()
BACKENDS = [b for b in ("opencl", "sycl") if get(b).is_available()]
needs_opencl = pytest.mark.skipif("opencl" not in BACKENDS, reason="no OpenCL here")


def test_layout_matches_its_definition(rng):
    """Every byte of to_fragments from the definition, block by block (q5_0: a high-bit plane; q4_1:
    an m plane; q8_0: two words a lane, groups of 2)."""
    for name in ("q5_0", "q4_1", "q8_0"):
        fmt = qkgen.formats.get(name)
        n, nb = 5, 7
        qt = qkgen.quantize(rng.standard_normal((n, nb * 32)).astype(np.float32), name)
        out = to_fragments(fmt, qt.data, n, nb * 32)
        blocks = qt.data.reshape(n, nb, fmt.block_bytes)
        g, words = group_blocks(fmt), frag_words(fmt)
        ng = -(-nb // g)
        planes = frag_planes(fmt, n, nb)
        assert len(words) * g == 4 and out.size == planes["bytes"] and all(v % 16 == 0 for v in planes.values())
        word = lambda r, b, w: blocks[r, b, fmt.offsets["qs"] + 4 * w : fmt.offsets["qs"] + 4 * w + 4].tobytes()  # noqa: E731
        for r in range(n):
            for b in range(ng * g):
                for q in range(4):
                    for i, a in enumerate(words):
                        at = ((r * ng + b // g) * 4 + q) * 16 + (b % g * len(words) + i) * 4
                        want = word(r, b, q + a) if b < nb else bytes(4)
                        assert out[at : at + 4].tobytes() == want, (name, r, b, q, a)
                for field in [fmt.high_bit_field, "d", "m"]:
                    if field in planes:
                        size = 4 if field == fmt.high_bit_field else 2
                        at = planes[field] + (r * ng * g + b) * size
                        want = blocks[r, b, fmt.offsets[field] : fmt.offsets[field] + size] if b < nb else 0
                        assert np.array_equal(out[at : at + size], np.broadcast_to(want, size)), (name, field, r, b)


def test_x_layout_matches_its_definition(rng):
    """x's q8_1 fragments layout (what gemv_int8frag reads) byte by byte: rows padded with zero
    blocks to a multiple of 4, block (r, b)'s code word w at place 2 (w % 4) + w / 4 of its 32
    bytes, its d and s (the block's first word) in the plane after the codes."""
    m, nb = 3, 6
    xq = ref.quantize(rng.standard_normal((m, nb * 32)).astype(np.float32), "q8_1").data.reshape(m, nb, 36)
    out = to_x_fragments(xq, m, nb * 32)
    nbx = x_frag_row_blocks(nb * 32)
    assert nbx == 8 and out.size == m * nbx * 36
    for r in range(m):
        for b in range(nbx):
            at = (r * nbx + b) * 32
            for w in range(8):
                want = xq[r, b, 4 + 4 * w : 8 + 4 * w] if b < nb else 0
                place = at + (2 * (w % 4) + w // 4) * 4
                assert np.array_equal(out[place : place + 4], np.broadcast_to(want, 4)), (r, b, w)
            ds = m * nbx * 32 + (r * nbx + b) * 4
            assert np.array_equal(out[ds : ds + 4], np.broadcast_to(xq[r, b, :4] if b < nb else 0, 4)), (r, b)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lane_group", [False, True])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_quantize_q8_1_writes_the_x_layout(backend, lane_group, dtype, rng, poisoned):
    """quantize_q8_1 with layout "fragments" writes to_x_fragments of the reference's blocks, pad
    blocks (zeros) included, for rows of whole, partial and single groups of 4 blocks."""
    for m, nb in ((3, 7), (1, 4), (8, 1)):
        x = check.gemv_x(rng, m, nb * 32, dtype)
        got = np.asarray(api.quantize_q8_1_device(x, backend=backend, layout="fragments", lane_group=lane_group))
        want = to_x_fragments(ref.quantize(check.host_f32(x, dtype), "q8_1").data, m, nb * 32)
        assert np.array_equal(got.reshape(-1), want), (m, nb)


def test_x_layout_kernels_read_well():
    """quantize_q8_1's fragments kernels (not among the catalog's variants) keep the generated-source
    rules: at most 120 columns a line, on every profile, both kernels, every dtype."""
    from qkgen.kernels.target import PROFILES

    for t in PROFILES.values():
        for lane_group in (False, True):
            for dtype in ("f16", "bf16", "f32"):
                src = render("quantize_q8_1", "q8_1", t, dtype=dtype, layout="fragments", lane_group=lane_group).source
                assert max(len(line) for line in src.splitlines()) <= 120, (t.name, lane_group, dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_repack_fragments_kernel_equals_the_layout(fmt, backend, rng, poisoned):
    dev = open_device(backend, 0)
    for n, nb in ((67, 7), (3, 1), (16, 8)):
        qt = qkgen.quantize(rng.standard_normal((n, nb * 32)).astype(np.float32), fmt)
        want = to_fragments(qt.format, qt.data, n, nb * 32)
        plan = Plan.make(dev, "repack_fragments", qt.format, dtype="u8")
        sizes = {"N": n, "K": nb * 32, "frags_bytes": want.size}
        (buf, arr, _), = plan.outputs(sizes).values()
        plan.launch({"data": qt.data, "frags": buf}, sizes)
        assert np.array_equal(dev.download(arr, "u8", want.size), want)


@pytest.fixture
def fragments_here(monkeypatch):
    """The int8mma path reads fragments on these backends too (runtime.paths takes them on CUDA)."""
    monkeypatch.setattr(paths, "INT8MMA_FRAGMENTS", {b: frozenset(FORMATS) for b in ("cuda", "opencl", "sycl")})


@needs_opencl
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_int8frag_matches_the_int8dot_terms(fmt, dtype, m, rng, poisoned, fragments_here):
    qt = qkgen.quantize(rng.standard_normal((67, 7 * 32)).astype(np.float32), fmt)
    x = check.gemv_x(rng, m, qt.shape[1], dtype)
    plans, _ = api.gemv_plans(qt, x, "int8mma", "opencl")
    assert plans[1].ks.name.startswith("gemv_int8frag_")
    y = qkgen.gemv(qt, x, path="int8mma", backend="opencl")
    assert y.shape == (m, 67)
    err, bound = check.int8dot_error(y, x, qt, dtype)
    assert np.all(err <= bound)
    assert len(qt.__dict__[api._FRAGMENTS]) == 1  # made once, kept with the weight
    y2 = qkgen.gemv(qt, x, path="int8mma", backend="opencl")
    assert np.array_equal(y2, y) and len(qt.__dict__[api._FRAGMENTS]) == 1


@needs_opencl
@pytest.mark.parametrize("unroll, wg, prefetch", [(1, 32, False), (3, 64, False), (2, 256, False), (1, 32, True),
                                                   (3, 64, True), (2, 256, True)])  # fmt: skip
def test_int8frag_turns_and_warps(unroll, wg, prefetch, rng, poisoned):
    """Other shapes compute the same sums: one warp, turns of 3 groups (a last turn past the end),
    warps with no group at all; W of the next turn loaded before this turn's products."""
    dev = open_device("opencl", 0)
    for fmt in ("q4_0", "q5_1", "q8_0"):
        qt = qkgen.quantize(rng.standard_normal((35, 11 * 32)).astype(np.float32), fmt)
        x = check.gemv_x(rng, 5, qt.shape[1], "f32")
        plan = Plan.make(dev, "gemv_int8frag", qt.format, dtype="f32", unroll=unroll, wg=wg, prefetch=prefetch)
        sizes = {"N": 35, "K": qt.shape[1], "M": 5}
        (buf, arr, _), = plan.outputs(sizes).values()
        frags = to_fragments(qt.format, qt.data, 35, qt.shape[1])
        xq = api.quantize_q8_1_device(x, backend="opencl", layout="fragments")
        plan.launch({"fragments": frags, "xq": xq, "y": buf}, sizes)
        err, bound = check.int8dot_error(dev.download(arr, "f32", 5 * 35).reshape(5, 35), x, qt, "f32")
        assert np.all(err <= bound)


def test_cuda_defaults():
    """On CUDA the int8mma path reads fragments for every row runtime.paths lists (all five), with
    the knobs it lists for some (kernel names that say so); blocks and the op's defaults elsewhere."""
    from qkgen.kernels.target import get_target

    t, cpu = get_target("cuda-sm90"), get_target("opencl-intel-cpu")
    assert {paths.default_int8mma_layout(t, qkgen.formats.get(f)) for f in FORMATS} == {"fragments"}
    assert paths.default_int8mma_layout(cpu, qkgen.formats.get("q4_0")) == "blocks"
    assert paths.int8frag_knobs(t, qkgen.formats.get("q4_0")) == {"unroll": 2, "wg": 256, "prefetch": True}
    assert paths.int8frag_knobs(t, qkgen.formats.get("q5_1")) == {} == paths.int8frag_knobs(cpu, qkgen.formats.get("q4_0"))
    name = render("gemv_int8frag", "q4_0", t, dtype="f32", **paths.int8frag_knobs(t, qkgen.formats.get("q4_0"))).name
    assert name == "gemv_int8frag_q4_0_f32_prefetch1_unroll2_wg256"


@needs_opencl
def test_the_layout_is_the_callers_choice(rng):
    """gemv(layout=...) picks the weight layout of the int8mma path whatever runtime.paths says
    (here blocks): fragments make the copy, blocks make none; a layout of another path is refused."""
    x = check.gemv_x(rng, 3, 5 * 32, "f32")
    for layout, copies in (("fragments", 1), ("blocks", 0)):
        qt = qkgen.quantize(rng.standard_normal((21, 5 * 32)).astype(np.float32), "q4_1")
        y = qkgen.gemv(qt, x, path="int8mma", backend="opencl", layout=layout)
        err, bound = check.int8dot_error(y, x, qt, "f32")
        assert np.all(err <= bound) and len(qt.__dict__.get(api._FRAGMENTS, {})) == copies
    with pytest.raises(qkgen.QKGenValueError, match="layout: 'planes' is not one the int8mma path reads"):
        qkgen.gemv(qt, x, path="int8mma", backend="opencl", layout="planes")
    with pytest.raises(qkgen.QKGenValueError, match="layout: 'fragments'; the float path reads the blocks; allowed"):
        qkgen.gemv(qt, x, path="float", backend="opencl", layout="fragments")
    assert qkgen.gemv(qt, x, path="float", backend="opencl", layout="blocks").shape == (3, 21)
