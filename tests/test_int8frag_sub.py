"""Tier 2: the super-block rows' fragments layout (ops/int8frag_sub.py): its byte map against the
blocks, the repack_fragments_sub kernel byte-equal to the numpy layout on every OpenCL and SYCL
device here, and gemv_int8frag_sub (gemv_int8mma_sub's product reading that layout) within the f32
bound of the int8dot terms on every OpenCL device here, where the product goes through local memory.
The CUDA form (PTX mma) runs in the GPU suite (tests/gpu/test_int8mma_gpu.py).

N = 35 is not a multiple of the 16 rows a work-group takes; MXFP4 and NVFP4 rows end in a partial
tile (a tile is 8 chunks of 32 elements: 8 MXFP4 blocks, 4 NVFP4 blocks).
"""

import numpy as np
import pytest

import qkgen
import qkgen.runtime.api as api
import qkgen.runtime.paths as paths
from qkgen.backends import get, open_device
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.int8frag_sub import fold_max, frag_sub_bytes, sub_fragments, to_sub_fragments
from qkgen.kernels.render import render
from qkgen.kernels.target import get_target
from qkgen.runtime.plan import Plan
from qkgen.tools import check

from .matrix import spread

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

FORMATS = get_op("gemv_int8frag_sub").formats()
BACKENDS = [b for b in ("opencl", "sycl") if get(b).is_available()]
opencl = get("opencl")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")


def _k(fmt: str) -> int:
    """Three super-blocks, or for the 32- and 64-element blocks 24 chunks and one block more (a
    partial last tile)."""
    block = qkgen.formats.get(fmt).block
    return 3 * 256 + (block if block < 256 else 0)


def test_nibble_map_covers_every_block_nibble():
    """A record is whole 16-byte units; every nibble of a tile's blocks is in it once (the code words a
    lane loads, the other fields in the head), each head field byte for byte; the code planes come
    first, each a multiple of 16 bytes. The byte map is the nibble map's where that moves whole bytes:
    every row but NVFP4."""
    assert set(FORMATS) == {"q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "mxfp4", "nvfp4"}
    for name in FORMATS:
        fmt = qkgen.formats.get(name)
        lay = sub_fragments(name)
        assert lay.record % 16 == 0 and len(lay.nibbles) == 2 * lay.record, name
        assert lay.group * fmt.block == 256, name  # a tile: 8 chunks of 32 elements
        tile = lay.group * fmt.block_bytes
        used = [s for s in lay.nibbles if s >= 0]
        assert sorted(used) == list(range(2 * tile)), name
        assert lay.plane_at[0] == 0 and lay.head_at == lay.plane_at[-1] + 16 * lay.words[-1], name
        for b, field, at in lay.head_field:
            src = lay.nibbles[2 * (lay.head_at + at) : 2 * (lay.head_at + at + fmt.member(field).nbytes)]
            start = b * fmt.block_bytes + fmt.offsets[field]
            assert list(src) == list(range(2 * start, 2 * (start + fmt.member(field).nbytes))), (name, b, field)
        assert (lay.src is None) == (name == "nvfp4"), name
        if lay.src is not None:
            assert lay.src == tuple(s // 2 if s >= 0 else -1 for s in lay.nibbles[0::2]), name


@pytest.mark.parametrize("fmt", ["mxfp4", "nvfp4"])
def test_table_rows_take_one_word_a_chunk(fmt, rng):
    """MXFP4 and NVFP4: in the numpy layout, lane q's word of chunk c holds the codes of the chunk's
    elements 4 q + i in byte i's low nibble and 16 + 4 q + i in its high one (the kernel's one table
    lookup a chunk), whichever elements the row pairs in its bytes: checked against the codes the
    reference codec unpacks."""
    from qkgen.formats.codec import unpack_codes

    f = qkgen.formats.get(fmt)
    n, k = 2, 256
    qt = qkgen.quantize(rng.standard_normal((n, k)).astype(np.float32), fmt)
    codes = unpack_codes(f, qt.data, n * k).reshape(n, k)
    lay = sub_fragments(fmt)
    out = to_sub_fragments(f, qt.data, n, k)
    for r in range(n):
        rec = out[r * lay.record : (r + 1) * lay.record]
        for c in range(8):
            assert lay.word_at[0][c] == (c, c), (fmt, c)
            for q in range(4):
                at = lay.lane_word(0, q, c)
                word = rec[at : at + 4]
                chunk = codes[r, 32 * c : 32 * c + 32]
                assert np.array_equal(word & 15, chunk[4 * q : 4 * q + 4]), (fmt, r, c, q)
                assert np.array_equal(word >> 4, chunk[16 + 4 * q : 20 + 4 * q]), (fmt, r, c, q)


@pytest.mark.parametrize("fmt", FORMATS)
def test_numpy_layout_follows_the_nibble_map(fmt, rng):
    """to_sub_fragments: nibble i of record (row, tile) is nibble nibbles[i] of the tile's blocks,
    zero for a pad and past the row's last block."""
    f = qkgen.formats.get(fmt)
    n, k = 3, _k(fmt)
    qt = qkgen.quantize(rng.standard_normal((n, k)).astype(np.float32), fmt)
    lay = sub_fragments(fmt)
    out = to_sub_fragments(f, qt.data, n, k)
    nb = k // f.block
    nt = -(-nb // lay.group)
    assert out.size == frag_sub_bytes(f, n, k) == n * nt * lay.record
    blocks = qt.data.reshape(n, nb * f.block_bytes)
    nibbles = np.stack([blocks & 15, blocks >> 4], axis=-1).reshape(n, -1)
    for r in range(n):
        for t in range(nt):
            rec = out[(r * nt + t) * lay.record : (r * nt + t + 1) * lay.record]
            at = 2 * t * lay.group * f.block_bytes
            want = [nibbles[r, at + s] if s >= 0 and at + s < nibbles.shape[1] else 0 for s in lay.nibbles]
            want = np.array(want, np.uint8)
            assert np.array_equal(rec, want[0::2] | (want[1::2] << 4)), (fmt, r, t)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_repack_fragments_sub_kernel_equals_the_layout(fmt, backend, rng, poisoned):
    dev = open_device(backend, 0)
    for n, k in ((35, _k(fmt)), (1, 256)):
        qt = qkgen.quantize(rng.standard_normal((n, k)).astype(np.float32), fmt)
        want = to_sub_fragments(qt.format, qt.data, n, k)
        plan = Plan.make(dev, "repack_fragments_sub", qt.format, dtype="u8")
        sizes = {"N": n, "K": k, "frags_bytes": want.size}
        (buf, arr, _), = plan.outputs(sizes).values()
        plan.launch({"data": qt.data, "frags": buf}, sizes)
        assert np.array_equal(dev.download(arr, "u8", want.size), want)


def _gemv_cases():
    """Every row x M on every OpenCL device, a dtype a row (taking turns, tests/matrix.py; M is not a
    kernel parameter): PoCL takes 15-25 s to build one of these kernels. make test-full: every dtype."""
    cases = spread(FORMATS, ("f32", "f16", "bf16"), lambda f: 0)
    return [pytest.param(f, d, m, dev, id=f"{f}-{d}-m{m}-{dev}")
            for dev in DEVICES for f, d in cases for m in (1, 3, 8)]


@needs_opencl
@pytest.mark.parametrize("fmt, dtype, m, device", _gemv_cases())
def test_int8frag_sub_matches_the_int8dot_terms(fmt, dtype, m, device, rng, poisoned):
    qt = qkgen.quantize(rng.standard_normal((35, _k(fmt))).astype(np.float32), fmt)
    x = check.gemv_x(rng, m, qt.shape[1], dtype)
    plans, _ = api.gemv_plans(qt, x, "int8mma", "opencl", device, layout="fragments")
    assert plans[1].ks.op == "gemv_int8frag_sub"
    y = qkgen.gemv(qt, x, path="int8mma", layout="fragments", backend="opencl", device=device)
    assert y.shape == (m, 35)
    err, bound = check.int8dot_error(y, x, qt, dtype)
    assert np.all(err <= bound)
    assert len(qt.__dict__[api._FRAGMENTS]) == 1  # made once, kept with the weight
    y2 = qkgen.gemv(qt, x, path="int8mma", layout="fragments", backend="opencl", device=device)
    assert np.array_equal(y2, y) and len(qt.__dict__[api._FRAGMENTS]) == 1


def test_forms_and_defaults():
    """CUDA's product is the mma instruction, a product per 16-element sub-block (q3_k, q6_k, nvfp4);
    q2_k's scales multiply its codes inside the bytes (3 x 15 at most), so a chunk takes one product
    of the scaled codes and one of the mins, for both sub-blocks. Without mma one exchange through
    local memory serves every product of a chunk made of parts, one each of q2_k's two. On CUDA the
    int8mma path of every super-block row reads fragments; blocks elsewhere."""
    cuda, cpu = get_target("cuda-sm90"), get_target("opencl-intel-cpu")
    assert {f for f in FORMATS if fold_max(qkgen.formats.get(f))} == {"q2_k"}
    q2 = render("gemv_int8frag_sub", "q2_k", cuda, dtype="f16").source
    assert q2.count("qk_mma_s8(c, ") == 8 * 2 and "each sub-block's min in all four bytes" in q2
    q6 = render("gemv_int8frag_sub", "q6_k", cuda, dtype="f16").source
    assert q6.count("qk_mma_s8(c, ") == 8 * 2 and "sm[" not in q6  # 8 chunks x 2 sub-blocks
    ocl = render("gemv_int8frag_sub", "q2_k", cpu, dtype="f16").source
    assert "mma.sync" not in ocl and ocl.count("barrier(") == 8 * 4 + 1  # 2 a product, 1 to add up
    ocl6 = render("gemv_int8frag_sub", "q6_k", cpu, dtype="f16").source
    assert ocl6.count("barrier(") == 8 * 2 + 1
    assert {paths.default_int8mma_layout(cuda, qkgen.formats.get(f)) for f in FORMATS} == {"fragments"}
    assert paths.default_int8mma_layout(cpu, qkgen.formats.get("q4_k")) == "blocks"


@needs_opencl
def test_the_layout_is_the_callers_choice(rng):
    """gemv(layout=...) picks the weight layout of a super-block row's int8mma path: fragments make
    the copy, blocks make none; a layout of another path is refused."""
    x = check.gemv_x(rng, 3, 256, "f32")
    for layout, op, copies in (("fragments", "gemv_int8frag_sub", 1), ("blocks", "gemv_int8mma_sub", 0)):
        qt = qkgen.quantize(rng.standard_normal((21, 256)).astype(np.float32), "q4_k")
        assert api.gemv_plans(qt, x, "int8mma", "opencl", None, layout=layout)[0][1].ks.op == op
        y = qkgen.gemv(qt, x, path="int8mma", backend="opencl", layout=layout)
        err, bound = check.int8dot_error(y, x, qt, "f32")
        assert np.all(err <= bound) and len(qt.__dict__.get(api._FRAGMENTS, {})) == copies
    with pytest.raises(qkgen.QKGenValueError, match="layout: 'planes' is not one the int8mma path reads"):
        qkgen.gemv(qt, x, path="int8mma", backend="opencl", layout="planes")


@needs_opencl
@pytest.mark.parametrize("fmt", ["q2_k", "q4_k", "q6_k", "nvfp4"])
def test_prefetch_gives_the_same_sums(fmt, rng, poisoned, monkeypatch):
    """gemv_int8frag_sub's prefetch knob (the next turn's tile loaded before this turn's products) moves
    loads only: y is bit-equal to the kernel's without it, with fewer tiles than warps (K = 256) and
    more (a work-group's warps taking several turns); the public call takes the knob from
    runtime.paths.INT8FRAG_KNOBS."""
    kind = paths.device_kind(open_device("opencl", "Intel").target)
    for k in (256, 24 * 256):
        qt = qkgen.quantize(rng.standard_normal((35, k)).astype(np.float32), fmt)
        x = check.gemv_x(rng, 5, k, "f32")
        y0 = qkgen.gemv(qt, x, path="int8mma", layout="fragments", backend="opencl", device="Intel")
        with monkeypatch.context() as mp:
            mp.setattr(paths, "INT8FRAG_KNOBS", {kind: {fmt: {"prefetch": True}}})
            plans, _ = api.gemv_plans(qt, x, "int8mma", "opencl", "Intel", layout="fragments")
            assert plans[1].ks.op == "gemv_int8frag_sub" and plans[1].ks.param("prefetch") is True
            qt.__dict__.pop(api._CALLS)  # the weight's bound calls: made again, with the knob
            y1 = qkgen.gemv(qt, x, path="int8mma", layout="fragments", backend="opencl", device="Intel")
        assert np.array_equal(y1, y0), (fmt, k)
