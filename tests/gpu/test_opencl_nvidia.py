"""The dequantize suite through the OpenCL backend on the NVIDIA GPU (OpenCL C 1.2, no fp16, no
OpenCL sub-groups): the same kernels' OpenCL renderings must give the same bits as the reference.
The int8dot GEMV path (the int8 dot product as PTX dp4a through inline asm, sm_61 on; its warps as
sub-groups through PTX shuffles, sm_70 on) within the f32 bound of its own definition, for every
row it takes; the warp helpers against numpy; round_to_f16 and the mma path's two forms with f32 x."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
from gpucases import assert_same, dequantize_cases, int8dot_k, int8dot_within_bound, sample, sample_for
from qkgen.formats import reference
from qkgen.kernels.dialects import dialect
from qkgen.kernels.ops import get_op
from qkgen.kernels.render import render

pytestmark = pytest.mark.gpu


def test_nvidia_device_target(opencl_nvidia):
    info = opencl_nvidia.info
    print(info.line())
    assert info.kind == "gpu"
    # What the kernels are rendered for on this device (NVIDIA: OpenCL C 1.2; its warps as
    # sub-groups through PTX from sm_70, warp matrix products from sm_80).
    t = opencl_nvidia.target
    assert t.backend == "opencl" and t.lang.startswith("OpenCL C ")
    assert not t.subgroup_size or t.subgroup_size in t.subgroup_sizes
    # NVIDIA's compiler takes inline PTX; the compute capability (cl_nv_device_attribute_query) gives
    # the arch, and dp4a comes with sm_61: the int8dot kernels then call the PTX helper.
    assert t.inline_ptx and t.arch.startswith("sm_"), t.describe()
    assert t.dot4 == (int(t.arch[3:]) >= 61)
    if "H100" in info.name:
        assert t.arch == "sm_90" and t.dot4 and t.subgroup_size == 32 and t.mma
    for fmt in get_op("gemv_int8dot").formats():
        src = render("gemv_int8dot", fmt, t, dtype="f16", mmax=8).source
        assert ("qk_dp4a(" in src) == t.dot4 and ("(int)(char)" in src) != t.dot4


def _run(dev, body: str, kernel: str, inputs: tuple, outputs: tuple, local=None) -> list:
    """`body` (OpenCL C naming dialect helpers) built with those helpers by NVIDIA's OpenCL
    compiler; kernel `kernel` run over the first input's elements with the inputs, then one buffer
    per output (arrays shaped as `outputs`), read back."""
    cl = pytest.importorskip("pyopencl")
    prg = cl.Program(dev.ctx, dialect(dev.target).prelude(body) + "\n\n" + body).build(dev.build_options(None))
    mf = cl.mem_flags
    bufs = [cl.Buffer(dev.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for v in inputs]
    outs = [np.empty_like(o) for o in outputs]
    obufs = [cl.Buffer(dev.ctx, mf.WRITE_ONLY, o.nbytes) for o in outs]
    getattr(prg, kernel)(dev.queue, (inputs[0].size,), local, *bufs, *obufs)
    for o, ob in zip(outs, obufs):
        cl.enqueue_copy(dev.queue, o, ob)
    dev.queue.finish()
    return outs


def test_dp4a_helper_is_the_signed_byte_dot_product(opencl_nvidia):
    """qk_dp4a, built by NVIDIA's OpenCL compiler, against numpy on every byte pattern's edges
    (-128, -1, 0, 127) and random words: exact int32."""
    t = opencl_nvidia.target
    if not t.dot4:
        pytest.skip(f"{t.describe()}: no dp4a")
    d = dialect(t)
    body = ("__kernel void dot4(__global const uint* a, __global const uint* b, __global const int* c, "
            "__global int* out) {\n"
            "    const uint i = get_global_id(0);\n"
            f"    out[i] = {d.dot4_i8('a[i]', 'b[i]', 'c[i]')};\n}}\n")  # fmt: skip
    assert "qk_dp4a(" in body
    rng = np.random.default_rng(0)
    # every pair of words made of the edge bytes 0x80, 0xff, 0x00, 0x7f (4^4 words each), then random ones
    edge = np.array([0x80, 0xFF, 0x00, 0x7F], np.uint32)
    i = np.arange(256)
    words = edge[i & 3] | edge[(i >> 2) & 3] << 8 | edge[(i >> 4) & 3] << 16 | edge[(i >> 6) & 3] << 24
    wa, wb = (w.ravel() for w in np.meshgrid(words, words))
    a = np.concatenate([wa, rng.integers(0, 2**32, 4096, dtype=np.uint32)])
    b = np.concatenate([wb, rng.integers(0, 2**32, 4096, dtype=np.uint32)])
    c = rng.integers(-(2**30), 2**30, a.size, dtype=np.int32)
    prods = a.view(np.int8).reshape(-1, 4).astype(np.int64) * b.view(np.int8).reshape(-1, 4)
    want = c.astype(np.int64) + prods.sum(axis=1)
    (out,) = _run(opencl_nvidia, body, "dot4", (a, b, c), (np.empty(a.size, np.int32),))
    assert np.array_equal(out.astype(np.int64), want)


def test_warp_helpers_are_butterfly_shuffles(opencl_nvidia):
    """qk_warp_sum and qk_warp_max (PTX shfl.sync), built by NVIDIA's OpenCL compiler: every lane of
    a warp gets the butterfly sum, bit for bit as float32 adds in that order, and the maximum."""
    t = opencl_nvidia.target
    if not t.subgroups:
        pytest.skip(f"{t.describe()}: no warps as sub-groups")
    d = dialect(t)
    body = ("__kernel void warp(__global const float* a, __global float* s, __global float* m) {\n"
            "    const uint i = get_global_id(0);\n"
            f"    s[i] = {d.subgroup_sum('a[i]')};\n    m[i] = {d.subgroup_max('a[i]')};\n}}\n")  # fmt: skip
    a = np.random.default_rng(1).standard_normal(32 * 64).astype(np.float32)
    want = a.reshape(-1, 32).copy()
    for o in (16, 8, 4, 2, 1):  # lane l adds lane l ^ o's value, as the shuffles do
        want = want + want[:, np.arange(32) ^ o]
    s, m = _run(opencl_nvidia, body, "warp", (a,), (a, a), local=(128,))
    assert np.array_equal(s, want.reshape(-1))
    assert np.array_equal(m, np.repeat(a.reshape(-1, 32).max(axis=1), 32))


def test_f16_helpers_are_ieee_conversions(opencl_nvidia):
    """qk_f32_to_f16 and qk_f16_to_f32 (PTX cvt where the target takes inline PTX), built by NVIDIA's
    OpenCL compiler: every f16 bit pattern to f32 exactly, and f32 values (ties at every f16
    exponent, subnormals, overflow, infinities, random) to f16 bits rounded to nearest even as numpy
    rounds them; a NaN stays a NaN."""
    body = ("__kernel void cvt(__global const float* a, __global const ushort* h, __global ushort* ho, "
            "__global float* fo) {\n"
            "    const uint i = get_global_id(0);\n"
            "    ho[i] = qk_f32_to_f16(a[i]);\n    fo[i] = qk_f16_to_f32(h[i]);\n}\n")  # fmt: skip
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    rng = np.random.default_rng(2)
    exps = 2.0 ** np.arange(-26, 17)
    ties = np.concatenate([exps * (1 + (2 * k + 1) * 2.0**-11) for k in range(4)])  # halfway between two f16
    edge = np.array([0.0, -0.0, 65504.0, 65520.0, 65519.99, 1e9, -1e9, np.inf, -np.inf, np.nan, 2.0**-24, 2.0**-25,
                     2.0**-25 * 1.0001, 2.0**-14, 2.0**-14 * (1 - 2.0**-11)])  # fmt: skip
    a = np.concatenate([ties, -ties, edge, rng.standard_normal(65536 - 2 * ties.size - edge.size) * 100])
    a = a.astype(np.float32)
    assert a.size == bits.size
    ho, fo = _run(opencl_nvidia, body, "cvt", (a, bits), (np.empty(a.size, np.uint16), np.empty(a.size, np.float32)))
    want_f = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(want_f)
    assert np.array_equal(fo[~nan], want_f[~nan]) and np.isnan(fo[nan]).all()
    want_h = a.astype(np.float16)
    nan = np.isnan(a)
    assert np.array_equal(ho[~nan], want_h[~nan].view(np.uint16)) and np.isnan(ho[nan].view(np.float16)).all()


def test_f16_pair_helpers_round_once(opencl_nvidia):
    """qk_hsub2 and qk_hmul2 (PTX f16x2 from sm_53), built by NVIDIA's OpenCL compiler: each half of
    random f16 pairs (finite, subnormals among them) is the float64 result rounded to f16 once."""
    body = ("__kernel void pairs(__global const uint* a, __global const uint* b, __global uint* s, "
            "__global uint* p) {\n"
            "    const uint i = get_global_id(0);\n"
            "    s[i] = qk_hsub2(a[i], b[i]);\n    p[i] = qk_hmul2(a[i], b[i]);\n}\n")  # fmt: skip
    rng = np.random.default_rng(3)
    h = rng.integers(0, 65536, (2, 2 * 65536), dtype=np.uint32).astype(np.uint16)
    h[np.isnan(h.view(np.float16)) | np.isinf(h.view(np.float16))] = 0x3C00
    a, b = (v.view(np.uint32) for v in h)
    s, p = _run(opencl_nvidia, body, "pairs", (a, b), (np.empty_like(a), np.empty_like(a)))
    fa, fb = (v.view(np.float16).astype(np.float64) for v in h)
    for got, want in ((s, fa - fb), (p, fa * fb)):
        want16 = want.astype(np.float16)
        ok = (got.view(np.uint16) == want16.view(np.uint16)) | (np.isnan(want16) & np.isnan(got.view(np.float16)))
        assert ok.all(), f"{(~ok).sum()} halves differ"


@pytest.mark.parametrize("v,shape", dequantize_cases())
def test_dequantize_numpy(v, shape, opencl_nvidia):
    qt = sample_for(v, shape)
    out = qkgen.dequantize(qt, v["dtype"], backend="opencl", device="NVIDIA")
    assert isinstance(out, np.ndarray)
    assert_same(out, qt, v["dtype"])


@pytest.mark.parametrize("v,shape", [c for c in dequantize_cases() if c.values[0]["dtype"] == "bf16"][::3])
def test_dequantize_pyopencl_arrays(v, shape, opencl_nvidia):
    cla = pytest.importorskip("pyopencl.array")
    qt0 = sample_for(v, shape)
    qt = qt0.with_arrays(**{k: cla.to_device(opencl_nvidia.queue, np.ascontiguousarray(a))
                            for k, a in qt0.arrays().items()})  # fmt: skip
    out = qkgen.dequantize(qt, "bf16", backend="opencl", device="NVIDIA")
    assert isinstance(out, cla.Array)
    assert_same(out.get(), qt0, "bf16")


# int8mma: the mma instruction through inline PTX, W read from its blocks or its fragments layout
@pytest.mark.parametrize("path, layout", [("int8dot", None), ("int8mma", "blocks"), ("int8mma", "fragments")])
@pytest.mark.parametrize("m, dtype", [(1, "f32"), (3, "f16"), (8, "bf16")])
@pytest.mark.parametrize("fmt", get_op("gemv_int8dot").formats())
def test_gemv_int8dot(fmt, m, dtype, path, layout, opencl_nvidia):
    qt = sample(fmt, (67, int8dot_k(fmt)))  # 67 rows: not a multiple of the rows per work-group
    x32 = np.random.default_rng(m).standard_normal((m, qt.shape[1])).astype(np.float32)
    x = x32 if dtype == "f32" else x32.astype(np.float16) if dtype == "f16" else reference.round_to(x32, "bf16")
    y = qkgen.gemv(qt, x, path=path, backend="opencl", device="NVIDIA", layout=layout)
    assert y.shape == (m, 67) and y.dtype == x.dtype
    got = reference.host_f32(np.asarray(y), dtype).astype(np.float64)
    eps = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8}[dtype]
    ok, worst = int8dot_within_bound(got, qt, reference.host_f32(x, dtype), eps)
    assert ok, f"outside the f32 bound of int8dot_terms: worst {worst}x"


def test_round_to_f16_matches_numpy(opencl_nvidia):
    """round_to_f16 on NVIDIA's OpenCL (no fp16 arithmetic: vstore_half_rte) rounds as numpy does:
    ties, subnormals, overflow, the infinities; NaN for NaN."""
    from qkgen.tools import check

    ok, differing = check._check_round_to_f16({}, None, np.random.default_rng(0), "opencl", "NVIDIA")
    assert ok, f"{differing:.0f} words differ"


@pytest.mark.parametrize("m", [3, 8])
@pytest.mark.parametrize("fmt, kw", [("nf4", {"nested": True}), ("int4", {}), ("q4_1", {})])
def test_gemv_mma_f32_x_rounded_first(fmt, kw, m, opencl_nvidia):
    """The mma path through inline PTX with f32 x, rounded by round_to_f16 first (the default for nf4
    from M = 4 here) and in the kernel: the same y bit for bit, within the rounded product's bound."""
    from qkgen.tools import check

    rng = np.random.default_rng(m)
    qt = qkgen.quantize(rng.standard_normal((67, 320)).astype(np.float32), fmt, **kw)
    x = rng.standard_normal((m, 320)).astype(np.float32)
    y = check.gemv_round_x(qt, x, True, "opencl", "NVIDIA")
    assert np.array_equal(y.view(np.uint32), check.gemv_round_x(qt, x, False, "opencl", "NVIDIA").view(np.uint32))
    err, bound = check.gemv_error(y, x, qt, "f32", rounded=True)
    assert not (err > bound).any()
