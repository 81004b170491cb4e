"""qkgen.interop.gguf: load() and write() of GGUF files (issue 12 item 1).

Files are written here with gguf.GGUFWriter (through write()), read back with load() and with
gguf's own reader, and compared with the reference codec: shapes in torch order, data shared
with the memory map, the source file unchanged, bad input named."""

import hashlib

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import qkgen  # noqa: E402
from qkgen.errors import QKGenValueError  # noqa: E402
from qkgen.formats import reference as ref  # noqa: E402
from qkgen.interop import gguf as qgguf  # noqa: E402

GGUF_FORMATS = [r.name for r in qkgen.formats() if r.gguf_type is not None and r.name != "q8_1"]


def sample(tmp_path, rng, fmt="q4_1", shape=(48, 96)):
    w = rng.standard_normal(shape).astype(np.float32)
    tensors = {"blk.0.attn_q.weight": qkgen.quantize(w, fmt), "blk.0.attn_norm.weight": w[0].copy(),
               "half": w[:4].astype(np.float16)}  # fmt: skip
    meta = {"general.name": "tiny", "llama.block_count": 1, "llama.rope.freq_base": 10000.0,
            "tokenizer.ggml.tokens": ["a", "b", "c"], "general.flag": True}  # fmt: skip
    path = tmp_path / "tiny.gguf"
    qgguf.write(path, tensors, meta)
    return path, tensors, meta


@pytest.mark.parametrize("fmt", GGUF_FORMATS)
def test_roundtrip_every_gguf_format(tmp_path, rng, fmt):
    shape = (40, max(64, 2 * qkgen.formats.get(fmt).block))  # N != K: the order matters; whole blocks a row
    path, tensors, _ = sample(tmp_path, rng, fmt, shape=shape)
    got = qgguf.load(path)
    assert list(got) == list(tensors)
    qt = got["blk.0.attn_q.weight"]
    assert qt.format.name == fmt and qt.shape == shape
    assert np.array_equal(np.asarray(qt.data), tensors["blk.0.attn_q.weight"].data)
    assert np.array_equal(ref.dequantize(qt), ref.dequantize(tensors["blk.0.attn_q.weight"]))
    assert np.array_equal(got["blk.0.attn_norm.weight"], tensors["blk.0.attn_norm.weight"])
    assert got["half"].dtype == np.float16 and np.array_equal(got["half"], tensors["half"])


def test_metadata_roundtrip_and_gguf_reader_agrees(tmp_path, rng):
    path, _, meta = sample(tmp_path, rng)
    got = qgguf.load(path)
    for k, v in meta.items():
        assert got.metadata[k] == pytest.approx(v) if isinstance(v, float) else got.metadata[k] == v
    assert got.metadata["general.architecture"] == "llama"
    # gguf's own reader sees ggml's order [K, N] for the same tensor
    t = {t.name: t for t in gguf.GGUFReader(path).tensors}["blk.0.attn_q.weight"]
    assert [int(s) for s in t.shape] == [96, 48] and t.tensor_type == gguf.GGMLQuantizationType.Q4_1


def test_load_is_memory_mapped_and_leaves_the_file_alone(tmp_path, rng):
    path, _, _ = sample(tmp_path, rng)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    got = qgguf.load(path)
    data = np.asarray(got["blk.0.attn_q.weight"].data)
    assert isinstance(data.base, np.memmap) or isinstance(data, np.memmap) or not data.flags.owndata
    assert not data.flags.writeable  # read-only map: nothing can write through it
    qkgen.dequantize(got["blk.0.attn_q.weight"], backend="opencl", device="Intel")
    del got, data
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_loaded_weight_runs_on_a_device(tmp_path, rng):
    path, tensors, _ = sample(tmp_path, rng)
    qt = qgguf.load(path)["blk.0.attn_q.weight"]
    x = rng.standard_normal((3, 96)).astype(np.float32)
    y = qkgen.gemv(qt, x, backend="opencl", device="Intel")
    want = x.astype(np.float64) @ ref.dequantize(qt).astype(np.float64).T
    assert np.allclose(y, want, rtol=1e-4, atol=1e-4)


def test_unsupported_type_names_tensor_type_and_allowed(tmp_path, rng):
    path = tmp_path / "iq4nl.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("blk.0.ffn_up.weight", np.zeros((4, 18), np.uint8), raw_dtype=gguf.GGMLQuantizationType.IQ4_NL)
    w.write_header_to_file(), w.write_kv_data_to_file(), w.write_tensors_to_file(), w.close()
    with pytest.raises(QKGenValueError, match=r"blk\.0\.ffn_up\.weight.*IQ4_NL.*allowed: F32, F16, BF16, Q4_0.*Q6_K"):
        qgguf.load(path)


@pytest.mark.parametrize("bad, match", [(42, "path"), ("/nonexistent.gguf", "path")])
def test_load_bad_path(bad, match):
    with pytest.raises(QKGenValueError, match=match):
        qgguf.load(bad)


def test_load_not_a_gguf_file(tmp_path):
    p = tmp_path / "x.gguf"
    p.write_bytes(b"not gguf at all" * 10)
    with pytest.raises(QKGenValueError, match="not a readable GGUF file"):
        qgguf.load(p)


def test_write_rejects_before_creating_the_file(tmp_path, rng):
    p = tmp_path / "out.gguf"
    nf4 = qkgen.quantize(rng.standard_normal((8, 64)).astype(np.float32), "nf4")
    with pytest.raises(QKGenValueError, match=r"tensors\['w'\].*no GGUF type"):
        qgguf.write(p, {"w": nf4})
    with pytest.raises(QKGenValueError, match=r"tensors\['w'\].*int64"):
        qgguf.write(p, {"w": np.zeros(4, np.int64)})
    with pytest.raises(QKGenValueError, match=r"metadata\['k'\]"):
        qgguf.write(p, {}, {"k": object()})
    with pytest.raises(QKGenValueError, match="tensors"):
        qgguf.write(p, [1, 2])
    assert not p.exists()


def test_gguf_names_and_enums_name_formats():
    assert qkgen.formats.get("Q4_1").name == "q4_1"
    assert qkgen.formats.get(gguf.GGMLQuantizationType.Q8_0).name == "q8_0"
