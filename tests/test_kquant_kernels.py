"""Issue 13 phase 2: dequantize and embedding kernels for the K-quant rows (Q2_K .. Q6_K, Q8_K) and
the FP4 rows (MXFP4, NVFP4) on the CPU devices (Intel's OpenCL runtime, and SYCL on it).

f32 outputs must equal gguf.quants.dequantize bit for bit (the reference codec where gguf-py has
no codec: Q8_K), on random blocks with finite scales, on edge blocks, and on blocks quantized by
qkgen's reference quantizers; f16/bf16 outputs the correctly rounded f32 values. Outputs are
poisoned before each launch. A K-quant GGUF file written by gguf.GGUFWriter from qkgen's quantizer
reads back (gguf.GGUFReader, qkgen.interop.gguf.load) and dequantizes equal on the device.
"""

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.formats import reference as R
from qkgen.formats.qtensor import QTensor
from qkgen.interop.lookup import embedding
from qkgen.kernels.render import render
from qkgen.tools import check

gguf = pytest.importorskip("gguf")
GT = gguf.GGMLQuantizationType

NEW = ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "mxfp4", "nvfp4"]
DTYPES = ("f32", "f16", "bf16")
OPENCL = get("opencl").is_available()
SYCL_WHY = get("sycl").why_unavailable()
BACKENDS = [pytest.param("opencl", marks=pytest.mark.skipif(not OPENCL, reason="no OpenCL")),
            pytest.param("sycl", marks=pytest.mark.skipif(SYCL_WHY is not None, reason=f"SYCL: {SYCL_WHY}"))]  # fmt: skip
DEVICE = {"opencl": "Intel", "sycl": "cpu"}


def random_blocks(fmt, nb, rng):
    """Random block bytes; every f16/f32 scale field a random finite value (scale bytes of the
    integer and float sub-block encodings stay random: every byte is a finite scale)."""
    blocks = rng.integers(0, 256, (nb, fmt.block_bytes), dtype=np.uint8)
    for f in fmt.fields:
        if f.ctype in ("f16", "f32"):
            at = fmt.offsets[f.name]
            v = (rng.standard_normal(nb) * 10.0 ** rng.uniform(-6, 3, nb)).astype("<f2" if f.ctype == "f16" else "<f4")
            blocks[:, at : at + f.nbytes] = v.view(np.uint8).reshape(nb, f.nbytes)
    return blocks


def edge_blocks(fmt, rng):
    """Zero, largest, negative and subnormal f16 scales, each with random and all-ones code bytes."""
    out = []
    for d in (0.0, 65504.0, -1.5, 6.0e-8, 1.0):
        b = random_blocks(fmt, 3, rng)
        for f in fmt.fields:
            if f.ctype in ("f16", "f32"):
                at = fmt.offsets[f.name]
                b[:, at : at + f.nbytes] = np.array([d], "<f2" if f.ctype == "f16" else "<f4").view(np.uint8)
        full = b.copy()
        for p in fmt.planes:
            at = fmt.offsets[p.field]
            full[:, at : at + fmt.member(p.field).nbytes] = 0xFF
        out += [b, full]
    return np.concatenate(out)


def expected(fmt, blocks):
    """gguf-py's dequantize where it has the type, else the reference codec (Q8_K)."""
    qt = QTensor(format=fmt, shape=(blocks.size // fmt.block_bytes * fmt.block,), data=blocks.reshape(-1),
                 blocksize=fmt.block)  # fmt: skip
    ours = R.dequantize(qt)
    if GT(fmt.gguf_type) in gguf.quants._type_traits:
        with np.errstate(over="ignore"):
            theirs = gguf.quants.dequantize(blocks, GT(fmt.gguf_type)).reshape(-1).astype(np.float32)
        assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), "reference codec vs gguf-py"
    return qt, ours


def same(out, want, dtype):
    exact, err = check.compare(np.asarray(out), want, dtype)
    return exact


@pytest.fixture(scope="module")
def sycl_dev():
    if SYCL_WHY is not None:
        pytest.skip(SYCL_WHY)
    dev = open_device("sycl", DEVICE["sycl"])
    dev.compile_many([render(op, name, dev.target, dtype=dt) for name in NEW for dt in DTYPES
                      for op in ("dequantize", "embedding")])  # fmt: skip
    return dev


def _dev(backend, request):
    if backend == "sycl":
        request.getfixturevalue("sycl_dev")
    return DEVICE[backend]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NEW)
def test_random_and_edge_blocks_bit_exact_with_gguf(name, dtype, backend, rng, poisoned, request):
    fmt = F.get(name)
    blocks = np.concatenate([random_blocks(fmt, 37, rng), edge_blocks(fmt, rng)])
    qt, want = expected(fmt, blocks)
    out = qkgen.dequantize(qt, dtype, backend=backend, device=_dev(backend, request))
    assert same(out, want, dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NEW)
def test_reference_quantized_blocks_bit_exact_with_gguf(name, dtype, backend, rng, poisoned, request):
    fmt = F.get(name)
    x = (rng.standard_normal((5, 3 * 256)) * np.exp2(rng.uniform(-6, 6, (5, 1)))).astype(np.float32)
    x[1] = 0  # an all-zero row
    x[2, :40] = 1.25  # a constant run
    qt = qkgen.quantize(x, name)
    _, want = expected(fmt, np.asarray(qt.data).reshape(-1, fmt.block_bytes))
    out = qkgen.dequantize(qt, dtype, backend=backend, device=_dev(backend, request))
    assert out.shape == x.shape and same(out, want.reshape(x.shape), dtype)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["mxfp4", "nvfp4"])
def test_every_float_sub_scale_byte(name, backend, rng, poisoned, request):
    """Each of the 256 scale bytes (E8M0, UE4M3: 0, 0x7F, 0xFF, the subnormals) in some sub-block,
    with random codes, decoded bit-exactly on the device."""
    fmt = F.get(name)
    nb = 256 // fmt.sub_count
    blocks = random_blocks(fmt, nb, rng)
    at = fmt.offsets[fmt.scales_field]
    blocks[:, at : at + fmt.sub_count] = rng.permutation(256).astype(np.uint8).reshape(nb, fmt.sub_count)
    qt, want = expected(fmt, blocks)
    for dtype in ("f32", "bf16"):
        out = qkgen.dequantize(qt, dtype, backend=backend, device=_dev(backend, request))
        assert same(out, want, dtype), dtype


@pytest.mark.parametrize("nblocks", [1, 2, 3, 17, 129, 1031])
@pytest.mark.parametrize("name", NEW)
def test_odd_block_counts(name, nblocks, rng, poisoned):
    """Block counts that leave the last work-group partly idle (and one block: most of it idle)."""
    if not OPENCL:
        pytest.skip("no OpenCL")
    fmt = F.get(name)
    qt, want = expected(fmt, random_blocks(fmt, nblocks, rng))
    assert same(qkgen.dequantize(qt, "f32", backend="opencl", device="Intel"), want, "f32")
    assert same(qkgen.dequantize(qt, "bf16", backend="opencl", device="Intel"), want, "bf16")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", NEW)
def test_embedding_rows_equal_dequantize(name, backend, rng, poisoned, request):
    fmt = F.get(name)
    rows, k = 13, 2 * 256
    qt = qkgen.quantize(rng.standard_normal((rows, k)).astype(np.float32), name)
    ids = np.array([12, 0, 5, 5, 7], np.uint32)
    dev = _dev(backend, request)
    want = R.dequantize(qt)[ids]
    for dtype in DTYPES:
        got = embedding(qt, ids, dtype, backend=backend, device=dev)
        assert got.shape == (ids.size, k) and same(got, want, dtype), dtype
    assert fmt.name in render("embedding", name, "opencl").name


@pytest.mark.skipif(not OPENCL, reason="no OpenCL")
def test_k_quant_gguf_file_round_trip(tmp_path, rng, poisoned):
    """Written by gguf.GGUFWriter from qkgen's quantizer, read by gguf.GGUFReader and by qkgen's
    loader, dequantized on the device: equal to gguf-py's dequantize of the file's bytes."""
    path = tmp_path / "k.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    tensors = {}
    for name in NEW:
        qt = qkgen.quantize(rng.standard_normal((6, 512)).astype(np.float32), name)
        tensors[f"blk.0.{name}.weight"] = qt
        w.add_tensor(f"blk.0.{name}.weight", np.asarray(qt.to_gguf()), raw_dtype=GT(F.get(name).gguf_type))
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    from qkgen.interop import gguf as qgguf

    loaded = qgguf.load(path)
    for t in gguf.GGUFReader(str(path)).tensors:
        qt, want = loaded[t.name], tensors[t.name]
        assert qt.format is want.format and qt.shape == (6, 512)
        assert np.array_equal(np.asarray(qt.data), np.asarray(want.data))
        out = qkgen.dequantize(qt, "f32", backend="opencl", device="Intel")
        assert np.array_equal(out.view(np.uint32), R.dequantize(want).view(np.uint32))
        if t.tensor_type in gguf.quants._type_traits:
            theirs = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            assert np.array_equal(out.view(np.uint32), theirs.reshape(out.shape).view(np.uint32))


@pytest.mark.parametrize("name", ["q8_k"])  # the others have it: test_int8dot_kquant
def test_int8dot_path_refuses_the_rows(name, rng):
    qt = qkgen.quantize(rng.standard_normal((2, 256)).astype(np.float32), name)
    with pytest.raises(qkgen.QKGenValueError, match=rf"format: {name} has no int8dot path; allowed: "):
        qkgen.gemv(qt, np.ones((1, 256), np.float32), path="int8dot", backend="opencl", device="Intel")


@pytest.mark.parametrize("backend", ["opencl", "sycl"])
@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("m, dtype", [(1, "f32"), (3, "f16"), (8, "f32"), (8, "bf16")])
def test_float_gemv_of_the_rows(backend, name, m, dtype, rng, poisoned):
    """The float GEMV decodes the K-quant and FP4 rows as dequantize does (sub-block scales, split
    planes in units, high planes): within the f32 accumulation bound of the float64 product."""
    n, k = 37, 256 * 5
    qt = qkgen.quantize(rng.standard_normal((n, k)).astype(np.float32), name)
    x = rng.standard_normal((m, k)).astype(np.float32)
    xx = qkgen.formats.reference.round_to(x, dtype) if dtype != "f32" else x
    y = qkgen.formats.reference.host_f32(np.asarray(qkgen.gemv(qt, xx, path="float", backend=backend)), dtype)
    xf = qkgen.formats.reference.host_f32(xx, dtype).astype(np.float64)
    w = qkgen.formats.reference.dequantize(qt).astype(np.float64)
    want = xf @ w.T
    bound = k * np.finfo(np.float32).eps * (np.abs(xf) @ np.abs(w).T) + (0 if dtype == "f32" else np.abs(want) * 2.0**-7)
    assert np.all(np.abs(y - want) <= bound), float(np.max(np.abs(y - want) - bound))
