"""The integer-dot GEMV path on every OpenCL device here: quantize_q8_1 (bit-identical to the
reference codec) and gemv_int8dot (q8_1 activations x GGUF weights by 4-way int8 dot products).

The rows of one scale per 32-element block (q4_0 .. q8_0) are tested here; the K-quant rows in
test_int8dot_kquant.py. gemv_int8dot is checked three ways: against a numpy emulation of its own math (the reference q8_1
of x, integer block sums, the same formula in float64) within an f32 rounding bound; by NMSE against
the float64 product with the unquantized activations and against the float path; and by crafted
weights with a single nonzero code, which show each weight element meets its own activation.
"""

import re

import numpy as np
import pytest

import qkgen
from qkgen.formats import reference
from qkgen import formats as F
from qkgen.backends import get
from qkgen.tools.catalog import variants
from qkgen.kernels.target import BACKENDS
from qkgen.runtime.api import quantize_q8_1_device
from qkgen.kernels.ops import OPS
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.int8dot import is_block_weight
from qkgen.kernels.render import render

INT8DOT_FORMATS = get_op("gemv_int8dot").formats()
BLOCK_FORMATS = [f for f in INT8DOT_FORMATS if is_block_weight(F.get(f))]  # the K-quants: test_int8dot_kquant

opencl = get("opencl")
needs_opencl = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
DEVICES = [d.name for d in opencl.devices()] if opencl.is_available() else []
ACT = F.get("q8_1")
EPS = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8}  # half an ulp of the output, relative
TINY = {"f32": 1e-30, "f16": 2.0**-25, "bf16": 1e-30}  # and absolute (f16 subnormals)
N_ROWS = 67
K_GEMV = 37 * 32  # 37 blocks: not a multiple of any lane count
NMSE_MAX = 1e-3


def x_host(x32: np.ndarray, dtype: str) -> np.ndarray:
    """x in dtype on the host (bf16: uint16 bits)."""
    if dtype == "f16":
        return x32.astype(np.float16)
    if dtype == "bf16":
        return reference.round_to(x32, "bf16")
    return x32.astype(np.float32)


def f32_of(x: np.ndarray, dtype: str) -> np.ndarray:
    """The f32 values an activation array in dtype holds."""
    return reference.bf16_to_f32(x) if dtype == "bf16" else np.asarray(x, dtype=np.float32)


def out_f64(y: np.ndarray, dtype: str) -> np.ndarray:
    return f32_of(np.asarray(y), dtype).astype(np.float64)


def nmse(y: np.ndarray, ref: np.ndarray) -> float:
    return float(((y - ref) ** 2).sum() / (ref**2).sum())


def f16_field(blocks: np.ndarray, fmt: F.Format, name: str) -> np.ndarray:
    at = fmt.offsets[name]
    return np.ascontiguousarray(blocks[..., at : at + 2]).view("<f2")[..., 0].astype(np.float64)


def emulate(qt: qkgen.QTensor, x32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(y, magnitude) of the int8dot math in float64: y[m, n] = sum_b term[m, n, b] with
    term = d_w * (d_x * sumi - zero * s_x) (+ m_w * s_x for d_m rows); magnitude sums the sizes of
    the parts each f32 rounding in the kernel is relative to."""
    fmt = qt.format
    n, k = qt.shape
    m, nb = x32.shape[0], k // fmt.block
    qx = reference.quantize(x32, ACT)
    xb = qx.data.reshape(m, nb, ACT.block_bytes)
    dx, sx = f16_field(xb, ACT, "d"), f16_field(xb, ACT, "s")
    cx = reference.unpack_codes(qx).reshape(m, nb, ACT.block).astype(np.int64)
    wb = np.asarray(qt.data).reshape(n, nb, fmt.block_bytes)
    dw = f16_field(wb, fmt, "d")
    cw = reference.unpack_codes(qt).reshape(n, nb, fmt.block).astype(np.int64)  # raw codes
    sumi = np.einsum("nbe,mbe->mnb", cw, cx).astype(np.float64)
    dxs = dx[:, None, :] * sumi
    zsx = fmt.zero * sx[:, None, :]
    term = dw[None] * (dxs - zsx)
    mag = np.abs(dw[None]) * (np.abs(dxs) + np.abs(zsx))
    if fmt.scale == "d_m":
        msx = f16_field(wb, fmt, "m")[None] * sx[:, None, :]
        term, mag = term + msx, mag + np.abs(msx)
    return term.sum(-1), mag.sum(-1)


def weight(fmt: str, rng, n: int = N_ROWS, k: int = K_GEMV) -> qkgen.QTensor:
    w = rng.standard_normal((n, k)).astype(np.float32)
    w.flat[rng.integers(0, w.size, 3)] *= 8.0
    return reference.quantize(w, fmt)


# ---------------------------------------------------------------------------------------------
# quantize_q8_1: bytes equal to the reference codec
# ---------------------------------------------------------------------------------------------


def activations(rng, m: int, k: int) -> np.ndarray:
    """Random rows with per-block scales, plus crafted blocks: ties at .5 (amax 127 gives d = 1),
    an all-zero block, a negative maximum."""
    x = rng.standard_normal((m, k)).astype(np.float32)
    x *= (10.0 ** rng.uniform(-2, 2, (m, k // 32, 1))).repeat(32, axis=-1).reshape(m, k).astype(np.float32)
    blocks = x.reshape(-1, 32)
    ties = np.array([127.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 126.5, -126.5], np.float32)
    blocks[0, : ties.size] = ties
    blocks[0, ties.size :] = np.linspace(-100, 100, 32 - ties.size)
    if blocks.shape[0] > 1:
        blocks[1] = 0.0
    if blocks.shape[0] > 2:
        blocks[2, 5] = -4 * np.abs(blocks[2]).max()
    return x


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("m, k", [(1, 32), (3, 96), (5, 4096 + 32)])
def test_quantize_q8_1_bytes_equal_reference(m, k, dtype, device, rng, poisoned):
    x = x_host(activations(rng, m, k), dtype)
    got = quantize_q8_1_device(x, backend="opencl", device=device)
    want = reference.quantize(f32_of(x, dtype), "q8_1").data
    assert got.dtype == np.uint8 and got.shape == want.shape == (m * k // 32 * ACT.block_bytes,)
    bad = np.flatnonzero((got != want).reshape(-1, ACT.block_bytes).any(axis=1))
    assert not bad.size, f"{bad.size} blocks differ, first {bad[0]}: {got.reshape(-1, 36)[bad[0]]} vs {want.reshape(-1, 36)[bad[0]]}"


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
def test_quantize_q8_1_many_scales(device, rng, poisoned):
    # 25600 blocks with scales over 12 decades: the correctly rounded divisions d = amax / 127 and
    # 1 / d, and roundf of x * id, all show up in the bytes.
    x = activations(rng, 25, 32 * 1024)
    x *= (10.0 ** rng.uniform(-6, 6, (25, 1024, 1))).repeat(32, axis=-1).reshape(x.shape).astype(np.float32)
    got = quantize_q8_1_device(x, backend="opencl", device=device)
    assert np.array_equal(got, reference.quantize(x, "q8_1", allow_nonfinite=True).data)  # f16 d may overflow to inf, as on the device


# ---------------------------------------------------------------------------------------------
# gemv_int8dot
# ---------------------------------------------------------------------------------------------


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("fmt", BLOCK_FORMATS)
def test_gemv_int8dot(fmt, dtype, m, device, rng, poisoned):
    qt = weight(fmt, rng)
    x = x_host(rng.standard_normal((m, K_GEMV)).astype(np.float32), dtype)
    x32 = f32_of(x, dtype)
    y = qkgen.gemv(qt, x, path="int8dot", backend="opencl", device=device)
    assert y.shape == (m, N_ROWS) and y.dtype == x.dtype
    got = out_f64(y, dtype)
    # exact: the same math in float64, within f32 rounding of each block term and the accumulation
    emu, mag = emulate(qt, x32)
    nb = K_GEMV // 32
    bound = (nb + 8) * 2.0**-24 * mag + EPS[dtype] * np.abs(emu) + TINY[dtype]
    bad = np.abs(got - emu) > bound
    assert not bad.any(), f"{bad.sum()} of {bad.size} outside the bound; worst {np.max(np.abs(got - emu) / bound)}x"
    # accuracy: against the float64 product with the unquantized activations, and the float path
    ref = x32.astype(np.float64) @ reference.dequantize(qt).astype(np.float64).T
    assert nmse(got, ref) < NMSE_MAX
    y_float = qkgen.gemv(qt, x, path="float", backend="opencl", device=device)
    assert nmse(got, out_f64(y_float, dtype)) < NMSE_MAX


def single_code_weight(fmt: F.Format, k: int) -> tuple[qkgen.QTensor, float]:
    """A [k, k] weight whose row r has one nonzero value, at element r (d = 1, m = 0), and that value.
    Its code sets the q5 fifth bit, and the zero codes of q5_0 do too."""
    top = (1 << fmt.bits) - 1
    zero_code, code = (0, 5) if fmt.code == "signed" else (fmt.zero, top)
    codes = np.full((k, k), zero_code, np.int64)
    codes[np.arange(k), np.arange(k)] = code
    data = reference.pack_codes(codes, fmt, k * k).reshape(-1, fmt.block_bytes)
    at = fmt.offsets["d"]
    data[:, at : at + 2] = np.array([1.0], "<f2").view(np.uint8)  # d = 1; m stays 0
    qt = qkgen.QTensor(format=fmt, shape=(k, k), data=data.reshape(-1), blocksize=fmt.block)
    return qt, float(reference.code_values(fmt, [code])[0])


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", BLOCK_FORMATS)
def test_each_weight_element_meets_its_own_activation(fmt, device, rng, poisoned):
    # q4/q5 pack elements j and j+16 into one byte: row j+16 (only element j+16 nonzero) must give
    # the product with x[j+16], not x[j] or x[4j...]. Two blocks per row check the block index too.
    k = 2 * 32
    qt, value = single_code_weight(F.get(fmt), k)
    w = reference.dequantize(qt)
    assert np.array_equal(w, value * np.eye(k, dtype=np.float32))
    x = np.stack([rng.permutation(np.linspace(-2, 2, k)) for _ in range(2)]).astype(np.float32)  # spaced apart
    y = qkgen.gemv(qt, x, path="int8dot", backend="opencl", device=device).astype(np.float64)
    emu, mag = emulate(qt, x)
    assert np.all(np.abs(y - emu) <= 10 * 2.0**-24 * mag)
    # y[m, r] is value * x[m, r] up to x's quantization (d_x / 2, d_x rounded to f16) and, for
    # zero-point rows, zero * (d_x * sum q_x - s_x) of every block (s_x and d_x rounded to f16);
    # x[m, r -+ 16] is far off.
    xb = reference.quantize(x, "q8_1").data.reshape(2, 2, ACT.block_bytes)
    dx = f16_field(xb, ACT, "d").repeat(32, axis=1)
    sx = np.abs(f16_field(xb, ACT, "s")).sum(axis=1, keepdims=True)
    tol = (abs(value) * (dx / 2 + 2.0**-10 * np.abs(x)) + F.get(fmt).zero * sx * 2.0**-10) * (1 + 2.0**-8)
    assert np.all(np.abs(y - value * x) <= tol), np.max(np.abs(y - value * x) / tol)
    assert np.all(np.abs(y - value * np.roll(x, 16, axis=1)) > tol)


@needs_opencl
@pytest.mark.parametrize("device", DEVICES)
def test_native_in_native_out(device, rng):
    import pyopencl.array as cla

    from qkgen.backends import open_device

    dev = open_device("opencl", device)
    qt = weight("q4_1", rng, n=40, k=256)
    x = rng.standard_normal((3, 256)).astype(np.float16)
    on_dev = qt.with_arrays(data=cla.to_device(dev.queue, qt.data))
    y = qkgen.gemv(on_dev, cla.to_device(dev.queue, x), path="int8dot", backend="opencl", device=device)
    assert isinstance(y, cla.Array) and y.shape == (3, 40) and y.dtype == np.float16
    assert np.array_equal(y.get(), qkgen.gemv(qt, x, path="int8dot", backend="opencl", device=device))
    xq = quantize_q8_1_device(cla.to_device(dev.queue, x), backend="opencl", device=device)
    assert isinstance(xq, cla.Array) and np.array_equal(xq.get(), reference.quantize(x.astype(np.float32), "q8_1").data)


sycl = get("sycl")


@pytest.mark.skipif(not sycl.is_available(), reason=f"SYCL: {sycl.why_unavailable()}")
@pytest.mark.parametrize("fmt", ["q4_0", "q5_1"])
def test_sycl_first_device(fmt, rng, poisoned):
    x = x_host(activations(rng, 3, K_GEMV), "bf16")
    assert np.array_equal(quantize_q8_1_device(x, backend="sycl"), reference.quantize(f32_of(x, "bf16"), "q8_1").data)
    qt = weight(fmt, rng)
    y = qkgen.gemv(qt, x, path="int8dot", backend="sycl")
    emu, mag = emulate(qt, f32_of(x, "bf16"))
    assert np.all(np.abs(out_f64(y, "bf16") - emu) <= (K_GEMV // 32 + 8) * 2.0**-24 * mag + EPS["bf16"] * np.abs(emu))


@needs_opencl
def test_int8dot_bad_input(rng):
    nf4 = reference.quantize(rng.standard_normal((8, 128)).astype(np.float32), "nf4")
    allowed = "allowed: q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k"
    with pytest.raises(qkgen.QKGenValueError, match=re.escape(f"qtensor.format: nf4 has no int8dot path; {allowed}")):
        qkgen.gemv(nf4, np.ones((1, 128), np.float32), path="int8dot", backend="opencl")
    q8 = reference.quantize(rng.standard_normal((32, 48)).astype(np.float32), "q8_0")  # K = 48
    with pytest.raises(qkgen.QKGenValueError, match=r"K=48 must be a multiple of 32"):
        qkgen.gemv(q8, np.ones((1, 48), np.float32), path="int8dot", backend="opencl")
    q4 = reference.quantize(rng.standard_normal((8, 128)).astype(np.float32), "q4_0")
    with pytest.raises(qkgen.QKGenValueError, match=r"1 <= M <= 8"):
        qkgen.gemv(q4, np.ones((9, 128), np.float32), path="int8dot", backend="opencl")
    with pytest.raises(qkgen.QKGenValueError, match="x: dtype float64; allowed"):
        qkgen.gemv(q4, np.ones((1, 128)), path="int8dot", backend="opencl")
    with pytest.raises(qkgen.QKGenValueError, match=r"K=40 must be a multiple of 32"):
        quantize_q8_1_device(np.ones((2, 40), np.float32), backend="opencl")


# ---------------------------------------------------------------------------------------------
# rendered sources (no device)
# ---------------------------------------------------------------------------------------------

NEW_OPS = ("quantize_q8_1", "gemv_int8dot")


@pytest.mark.parametrize("backend", BACKENDS)
def test_new_ops_render_everywhere_with_unique_names(backend):
    names = set()
    for op in NEW_OPS:
        assert op in OPS
        vs = list(variants(op))
        assert vs, op
        for v in vs:
            v = dict(v)
            ks = render(v.pop("op"), v.pop("format"), backend, **v)
            assert ks.source.startswith("/* Generated by qkgen " + qkgen.__version__)
            assert f"kernel:   {ks.name}" in ks.source and re.search(rf"void {ks.name}\(", ks.source)
            names.add(ks.name)
    assert len(names) == sum(len(list(variants(op))) for op in NEW_OPS)
    assert {v["format"] for v in variants("gemv_int8dot")} == set(INT8DOT_FORMATS) == {
        "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "mxfp4", "nvfp4"}
    assert set(BLOCK_FORMATS) == {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}
    assert {v["format"] for v in variants("quantize_q8_1")} == {"q8_1"}


def test_dot_product_forms():
    for fmt in BLOCK_FORMATS:
        cuda = render("gemv_int8dot", fmt, "cuda", dtype="f16").source
        assert "__dp4a(" in cuda
        dot4 = render("gemv_int8dot", fmt, "opencl-intel-gpu").source
        assert "dot_4x8packed_ss_int(" in dot4
        plain = render("gemv_int8dot", fmt, "opencl-nvidia").source
        assert "dot_4x8packed" not in plain and "(int)(char)" in plain
        sycl = render("gemv_int8dot", fmt, "sycl").source
        assert "(int)(char)" in sycl


def test_two_byte_aligned_weight_blocks_get_two_byte_loads():
    """Never a 4-byte load at a 2-byte aligned address: 16-bit pairs, or (word_loads, CUDA's default)
    words from the 4-byte boundary at or 2 bytes below the codes, shifted."""
    for fmt in BLOCK_FORMATS:
        row = F.get(fmt)
        for backend in BACKENDS:
            for words in (False, True):
                body = render("gemv_int8dot", fmt, backend, word_loads=words).source.split("void gemv_int8dot_", 1)[1]
                below = "(qs - w_sh / 8u)" in body and "(size_t)qs & 2u" in body
                # code and high-bit words are read through qs / hp, pointers into the block (the
                # shifted words from the boundary below qs aside)
                wide = re.search(r"(uint|uint4|uint2|vec<uint, \d>)\*\)\(?(bp|qs|hp)\b",
                                 body.replace("uint*)(qs - w_sh / 8u)", ""))
                if row.block_align == 2:
                    assert not wide, (fmt, backend)
                    assert "ushort*)qs)" in body, (fmt, backend)
                    assert below == words, (fmt, backend, words)


def test_quantize_q8_1_divides_correctly_rounded():
    assert "__fdiv_rn(amax, 127.0f)" in render("quantize_q8_1", "q8_1", "cuda").source
    assert "(amax / 127.0f)" in render("quantize_q8_1", "q8_1", "opencl").source


def test_int8dot_ops_reject_other_formats():
    with pytest.raises(qkgen.QKGenValueError, match=r"format: gemv_int8dot does not take nf4; allowed: q4_0"):
        render("gemv_int8dot", "nf4", "cuda")
    with pytest.raises(qkgen.QKGenValueError, match=r"format: gemv_int8dot does not take q8_1"):
        render("gemv_int8dot", "q8_1", "cuda")
    with pytest.raises(qkgen.QKGenValueError, match=r"format: quantize_q8_1 does not take q8_0; allowed: q8_1"):
        render("quantize_q8_1", "q8_0", "opencl")
