"""Issue 13, phase 1: the K-quant rows (Q2_K .. Q6_K, Q8_K) and the FP4 rows (MXFP4, NVFP4) with their
reference codecs: dequantize bit-exact with gguf-py, quantizers bit-exact with gguf-py (MXFP4) and with
ggml's own C reference (compiled here from ../shared/peers/ggml with -ffp-contract=off, when present),
error bounds, and a GGUF file round trip.

The rows are in the format table (phase 2): the reference dequantize reads every fact from the row.
"""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.formats import kquant as K
from qkgen.formats import mxfp4 as M
from qkgen.formats import reference as R
from qkgen.formats.qtensor import QTensor

gguf = pytest.importorskip("gguf")
GT = gguf.GGMLQuantizationType
f32, u32 = np.float32, np.uint32

NEW_ROWS = K.ROWS + M.ROWS
IN_GGUF_PY = [r for r in NEW_ROWS if GT(r.gguf_type) in gguf.quants._type_traits]  # gguf-py has no Q8_K
GGML = Path(__file__).resolve().parents[2] / "shared" / "peers" / "ggml"
ids = lambda r: r.name  # noqa: E731


def _quantize_blocks(fmt, x):
    return (K if fmt in K.ROWS else M).quantize_blocks(fmt, np.asarray(x, f32).reshape(-1, fmt.block))


def _qt(fmt, blocks, shape=None):
    blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
    n = blocks.size // fmt.block_bytes * fmt.block
    return QTensor(format=fmt, shape=shape or (n,), data=blocks.reshape(-1), blocksize=fmt.block)


def _same_bits(a, b):
    a, b = np.asarray(a, f32), np.asarray(b, f32)
    return a.shape == b.shape and np.array_equal(a.view(u32), b.view(u32))


def _random_blocks(fmt, nb, rng, scale_bytes=None):
    """Random bytes; every f16 scale field set to a random finite f16 (or the given bytes)."""
    blocks = rng.integers(0, 256, (nb, fmt.block_bytes), dtype=np.uint8)
    for f in fmt.fields:
        if f.ctype == "f16":
            at = fmt.offsets[f.name]
            v = (rng.standard_normal(nb) * 10.0 ** rng.uniform(-6, 3, nb)).astype(np.float16)
            blocks[:, at : at + 2] = v.view(np.uint8).reshape(nb, 2) if scale_bytes is None else scale_bytes
    if fmt.name == "q8_k":  # f32 d held as 4 bytes
        blocks[:, :4] = (rng.standard_normal(nb) * 1e-2).astype("<f4").view(np.uint8).reshape(nb, 4)
    return blocks


def _edge_blocks(fmt, rng):
    """Zero scales, all-ones code bytes (max codes), the largest, negative and subnormal f16 scales."""
    out = []
    for d in (0.0, 65504.0, -1.5, 6.0e-8, 1.0):
        b = _random_blocks(fmt, 4, rng, scale_bytes=np.array([d], np.float16).view(np.uint8))
        out.append(b)
        full = b.copy()
        for name in ("qs", "ql", "qh", "hmask"):
            if fmt.has_field(name):
                at = fmt.offsets[name]
                full[:, at : at + fmt.member(name).nbytes] = 0xFF
        out.append(full)
    return np.concatenate(out)


# ---- rows ----


@pytest.mark.parametrize("fmt", NEW_ROWS, ids=ids)
def test_rows_match_ggml_sizes_and_pass_the_row_checks(fmt):
    assert gguf.constants.GGML_QUANT_SIZES[GT(fmt.gguf_type)] == (fmt.block, fmt.block_bytes)
    assert GT(fmt.gguf_type).name.lower() == fmt.name
    F.check_row(fmt)  # the registry's checks plus the family's, without registering


def test_field_offsets_follow_ggml_common_h():
    rows = {r.name: r.offsets for r in NEW_ROWS}
    assert rows["q2_k"] == {"scales": 0, "qs": 16, "d": 80, "dmin": 82}
    assert rows["q3_k"] == {"hmask": 0, "qs": 32, "scales": 96, "d": 108}
    assert rows["q4_k"] == {"d": 0, "dmin": 2, "scales": 4, "qs": 16}
    assert rows["q5_k"] == {"d": 0, "dmin": 2, "scales": 4, "qh": 16, "qs": 48}
    assert rows["q6_k"] == {"ql": 0, "qh": 128, "scales": 192, "d": 208}
    assert rows["q8_k"] == {"d": 0, "qs": 4, "bsums": 260}
    assert rows["mxfp4"] == {"e": 0, "qs": 1} and rows["nvfp4"] == {"d": 0, "qs": 4}
    q6 = K.ROWS[4]  # 2 high bits: low_bits 4, codes -32..31
    assert isinstance(q6, F.Format) and (q6.name, q6.low_bits, q6.qmin, q6.qmax) == ("q6_k", 4, -32, 31)


@pytest.mark.parametrize("change", [dict(block_bytes=145), dict(bits=5), dict(high_bit_field="qs"),
                                    dict(scale="d"), dict(blocksizes=(256, 512))])  # fmt: skip
def test_bad_k_rows_are_rejected_naming_a_field(change):
    import dataclasses

    with pytest.raises(F.FormatError, match="field '"):
        F.check_row(dataclasses.replace(K.ROWS[2], **change))


# ---- dequantize: bit-exact with gguf-py ----


@pytest.mark.parametrize("fmt", IN_GGUF_PY, ids=ids)
def test_dequantize_random_and_edge_blocks_bit_exact_with_gguf(fmt):
    rng = np.random.default_rng(fmt.gguf_type)
    blocks = np.concatenate([_random_blocks(fmt, 300, rng), _edge_blocks(fmt, rng)])
    ours = R.dequantize(_qt(fmt, blocks))
    with np.errstate(over="ignore"):
        theirs = gguf.quants.dequantize(blocks, GT(fmt.gguf_type)).reshape(-1)
    assert _same_bits(ours, theirs)


def test_q8_k_dequantize_is_d_times_q():
    fmt = K.ROWS[5]
    rng = np.random.default_rng(15)
    blocks = _random_blocks(fmt, 50, rng)
    d = blocks[:, :4].copy().view("<f4")
    q = blocks[:, 4:260].view(np.int8).astype(f32)
    assert _same_bits(R.dequantize(_qt(fmt, blocks)), (d * q).reshape(-1))


@pytest.mark.parametrize("fmt", NEW_ROWS, ids=ids)
def test_quantize_then_dequantize_error_bounds_and_gguf_agrees(fmt):
    # bounds ~1.2x what the data below reaches (max error per block / block amax, rms error per row / rms)
    rel_max, rel_rmse = {"q2_k": (0.4, 0.38), "q3_k": (0.22, 0.19), "q4_k": (0.095, 0.093), "q5_k": (0.047, 0.048),
                         "q6_k": (0.02, 0.024), "q8_k": (0.5 / 127 * 1.001, 0.0097), "mxfp4": (0.2501, 0.15),
                         "nvfp4": (0.21, 0.125)}[fmt.name]  # fmt: skip
    rng = np.random.default_rng(7)
    low = -2 if fmt.name == "nvfp4" else -8  # NVFP4's UE4M3 scale has no range below 2^-9 (no tensor scale)
    x = (rng.standard_normal((48, 512)) * np.exp2(rng.uniform(low, 8, (48, 1)))).astype(f32)
    x[0] = 0  # an all-zero row decodes to zeros
    blocks = _quantize_blocks(fmt, x)
    y = R.dequantize(_qt(fmt, blocks, x.shape))
    err = np.abs(x - y).reshape(-1, fmt.block)
    amax = np.abs(x).reshape(-1, fmt.block).max(axis=1)
    assert not y[0].any()
    assert np.all(err.max(axis=1) <= rel_max * amax)
    assert np.sqrt(((x - y) ** 2).sum(axis=1)[1:] / (x**2).sum(axis=1)[1:]).max() <= rel_rmse
    if fmt in IN_GGUF_PY:
        assert _same_bits(y.reshape(-1), gguf.quants.dequantize(blocks, GT(fmt.gguf_type)).reshape(-1))


# ---- quantizers ----


def test_mxfp4_quantize_bytes_equal_gguf():
    fmt = M.ROWS[0]
    rng = np.random.default_rng(39)
    x = (rng.standard_normal((400, 32)) * np.exp2(rng.uniform(-40, 40, (400, 1)))).astype(f32)
    x[0], x[1], x[2, :] = 0, 1e-42, 6.0  # zeros, subnormals, exact top code
    x[3] = np.arange(32, dtype=f32) * 0.25  # ties between codes (first code wins)
    x[4, :16] = -x[4, 16:]  # signs
    with np.errstate(over="ignore"):
        theirs = gguf.quants.quantize(x, GT.MXFP4)
    assert np.array_equal(_quantize_blocks(fmt, x), theirs.reshape(-1, fmt.block_bytes))


def test_nearest_int_is_ggml_rounding():
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3.49999, 4194303.0, -7.5], f32)
    assert K.nearest_int(v).tolist() == np.rint(v).astype(int).tolist()


@pytest.fixture(scope="module")
def ggml_c(tmp_path_factory):
    """ggml-quants.c as a shared library (-O2 -ffp-contract=off: ISO C float semantics, no FMA)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not (GGML / "src" / "ggml-quants.c").exists():
        pytest.skip("needs a C compiler and the ggml sources in ../shared/peers/ggml")
    d = tmp_path_factory.mktemp("ggml")
    (d / "stubs.c").write_text(
        "#include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n"
        "void ggml_abort(const char *f, int l, const char *m, ...) { abort(); }\n"
        "size_t ggml_row_size(int t, int64_t n) { abort(); }\nconst char *ggml_type_name(int t) { return \"?\"; }\n"
        "size_t ggml_type_size(int t) { abort(); }\n"
    )
    lib = d / "libggmlquants.so"
    cmd = [cc, "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-DNDEBUG", f"-I{GGML / 'include'}",
           f"-I{GGML / 'src'}", str(GGML / "src" / "ggml-quants.c"), str(d / "stubs.c"), "-o", str(lib), "-lm"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        pytest.skip(f"building ggml-quants.c failed: {res.stderr[-400:]}")
    return ctypes.CDLL(str(lib))


def _c_name(fmt):
    return fmt.name[:-1] + "K" if fmt.name.endswith("_k") else fmt.name


@pytest.mark.parametrize("fmt", NEW_ROWS, ids=ids)
def test_quantize_bytes_equal_ggml_c_reference(fmt, ggml_c):
    rng = np.random.default_rng(100 + fmt.gguf_type)
    nb = 256 * 256 // fmt.block
    x = (rng.standard_normal(nb * fmt.block) * np.repeat(np.exp2(rng.uniform(-12, 12, nb)), fmt.block)).astype(f32)
    x[: fmt.block] = 0  # zeros, a constant run, one outlier, tiny values, all positive
    x[fmt.block : fmt.block + 16], x[3 * fmt.block + 5], x[4 * fmt.block : 5 * fmt.block] = 1.5, 1e4, 1e-20
    x[5 * fmt.block : 6 * fmt.block] = np.abs(x[5 * fmt.block : 6 * fmt.block])
    out = np.zeros((nb, fmt.block_bytes), np.uint8)
    c_quant = getattr(ggml_c, f"quantize_row_{_c_name(fmt)}_ref")
    c_quant(x.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
    ours = _quantize_blocks(fmt, x)
    assert (ours != out).any(axis=1).sum() == 0
    back = np.zeros(x.size, f32)
    c_deq = getattr(ggml_c, f"dequantize_row_{_c_name(fmt)}")
    c_deq(out.ctypes.data_as(ctypes.c_void_p), back.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(x.size))
    assert _same_bits(R.dequantize(_qt(fmt, out)), back)


# ---- by name, through the registry: QTensor.from_gguf / to_gguf, reference.quantize, a GGUF file ----


def test_new_rows_are_in_the_table():
    assert all(F.get(r.name) is r for r in NEW_ROWS)


def test_gguf_file_round_trip(tmp_path):
    rng = np.random.default_rng(12)
    path = tmp_path / "k.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    tensors = {}
    for fmt in NEW_ROWS:
        x = rng.standard_normal((6, 2 * 256)).astype(f32)
        qt = R.quantize(x, fmt.name.upper())  # the GGUF type name resolves to the row
        tensors[fmt.name] = qt
        writer.add_tensor(fmt.name, np.asarray(qt.to_gguf()), raw_dtype=GT(fmt.gguf_type))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for t in gguf.GGUFReader(str(path)).tensors:
        want = tensors[t.name]
        shape = tuple(int(s) for s in reversed(t.shape))  # gguf-py reports [K, N]
        qt = QTensor.from_gguf(t.data, GT(t.tensor_type), shape)
        assert qt.format.name == t.name and qt.shape == want.shape
        assert np.array_equal(np.asarray(qt.to_gguf()), np.asarray(want.to_gguf()))
        assert _same_bits(R.dequantize(qt), R.dequantize(want))
        if qt.format in IN_GGUF_PY:
            assert _same_bits(R.dequantize(qt), gguf.quants.dequantize(t.data, t.tensor_type))
