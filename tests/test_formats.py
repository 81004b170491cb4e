"""Tier 1: the format table's invariants. A row that breaks one is rejected at import."""

import dataclasses

import numpy as np
import pytest

import qkgen
from qkgen import formats as F


def test_formats_api_lists_every_row():
    assert [f.name for f in qkgen.formats()] == list(F.FORMATS)
    assert set(F.FORMATS) == {"nf4", "fp4", "blockwise8", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1",
                              "int8", "int4", "int2", "int1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k",
                              "mxfp4", "nvfp4"}  # fmt: skip


@pytest.mark.parametrize("fmt", F.ROWS, ids=lambda f: f.name)
def test_row_invariants(fmt):
    assert fmt.block in fmt.blocksizes
    assert fmt.per_byte * fmt.low_bits == 8
    if fmt.inline:
        assert sum(f.nbytes for f in fmt.fields) == fmt.block_bytes
        assert fmt.member(fmt.codes_field).nbytes * 8 == fmt.block * fmt.low_bits
        assert fmt.block_bytes % fmt.block_align == 0
    if fmt.code == "table":
        assert len(fmt.table) == 2**fmt.bits
    else:
        assert fmt.qmin < 0 < fmt.qmax or fmt.scale == "d_m"


def test_gguf_sizes_and_alignment():
    sizes = {f.name: (f.block, f.block_bytes, f.block_align) for f in F.ROWS if f.family == "gguf"}
    assert sizes == {"q4_0": (32, 18, 2), "q4_1": (32, 20, 4), "q5_0": (32, 22, 2), "q5_1": (32, 24, 8),
                     "q8_0": (32, 34, 2), "q8_1": (32, 36, 4)}  # fmt: skip
    assert F.get("q5_1").offsets == {"d": 0, "m": 2, "qh": 4, "qs": 8}


def test_tables():
    assert F.NF4_TABLE[0] == -1.0 and F.NF4_TABLE[7] == 0.0 and F.NF4_TABLE[15] == 1.0
    assert np.all(np.diff(F.NF4_TABLE) > 0)
    fp4 = np.array(F.FP4_TABLE)
    assert np.array_equal(fp4[8:], -fp4[:8])  # bit 3 is the sign
    assert np.allclose(fp4[:8] * 12, [0, 0.0625, 8, 12, 4, 6, 2, 3])
    d = np.array(F.DYNAMIC8_TABLE)
    assert d.shape == (256,) and np.all(np.diff(d) >= 0) and d[-1] == 1.0


def test_dynamic_map_equals_bitsandbytes():
    bnb = pytest.importorskip("bitsandbytes.functional")
    assert np.array_equal(np.float32(F.DYNAMIC8_TABLE), bnb.create_dynamic_map(signed=True).numpy())


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(block_bytes=19), "block_bytes"),
        (dict(table=(0.0,) * 15), "table"),
        (dict(pack="zigzag"), "pack"),
        (dict(blocksizes=(48, 64)), "blocksizes"),
        (dict(fields=(F.Field("d", "f16"), F.Field("qs", "u8", 15))), "fields"),
        (dict(bits=3), "bits"),
    ],
)
def test_invalid_rows_are_rejected_naming_the_field(change, field):
    base = F.get("q4_0") if "block_bytes" in change or "fields" in change else F.get("nf4")
    with pytest.raises(F.FormatError, match=f"field '{field}'"):  # at construction or at registration
        F.check_row(dataclasses.replace(base, **change))


def test_unknown_format_and_blocksize():
    with pytest.raises(F.FormatError, match="allowed: nf4"):
        F.get("nf5")
    with pytest.raises(F.FormatError, match="allowed: 32, 64"):
        F.check_blocksize(F.get("nf4"), 48)
    with pytest.raises(F.FormatError, match="blocksize"):
        F.check_blocksize(F.get("blockwise8"), 32)


@pytest.mark.parametrize("fmt", [f for f in F.ROWS if f.inline], ids=lambda f: f.name)
def test_planes_place_every_code_bit_once(fmt):
    """locate() over the planes is a bijection: every bit of every code field belongs to exactly
    one element, and the planes' bits make up the code."""
    e = np.arange(fmt.block)
    assert sum(p.bits for p in fmt.planes) == fmt.bits and fmt.planes[0].shift == 0
    for k, p in enumerate(fmt.planes):
        byte, shift = F.locate(fmt, e, plane=k)
        bits = np.asarray(byte) * 8 + np.asarray(shift)
        assert np.array_equal(np.sort(bits), np.arange(fmt.block) * p.bits), p
        assert fmt.member(p.field).nbytes * 8 == fmt.block * p.bits


def test_k_quant_planes_follow_ggml():
    """Byte and bit of a few elements, read off ggml's dequantize_row_q*_K loops."""
    q4k, q6k, q3k = F.get("q4_k"), F.get("q6_k"), F.get("q3_k")
    assert F.locate(q4k, 100) == (32 + 4, 4)  # second 64: bytes 32..63, element 32+j in the high nibble
    assert F.locate(q6k, 200) == (64 + 8, 4) and F.locate(q6k, 200, plane=1) == (32 + 8, 4)
    assert F.locate(q3k, 77) == (13, 4) and F.locate(q3k, 77, plane=1) == (13, 2)
    assert F.locate(F.get("q5_0"), 21, plane=1) == (2, 5)  # q5_0: bit e of qh


def test_sub_scale_facts():
    facts = {f.name: (f.sub_block, f.sub_scales, f.scales_field, f.has_min) for f in F.ROWS if f.sub_scales}
    assert facts == {"q2_k": (16, "nibbles", "scales", True), "q3_k": (16, "k3", "scales", False),
                     "q4_k": (32, "k4", "scales", True), "q5_k": (32, "k4", "scales", True),
                     "q6_k": (16, "i8", "scales", False), "mxfp4": (32, "e8m0_half", "e", False),
                     "nvfp4": (16, "ue4m3_half", "d", False)}  # fmt: skip
    assert F.get("q8_k").member("d").ctype == "f32" and F.get("q8_k").sub_scales is None


def test_integer_sub_scale_ranges_are_what_decode_gives():
    """subscales.INTEGER_RANGE: every field byte value decoded (scale and min) lies in the stated
    range, and both ends are reached."""
    from qkgen.formats import subscales

    nbytes = {"k4": 12, "k3": 12, "nibbles": 16, "i8": 16}
    assert set(subscales.INTEGER_RANGE) == set(nbytes)
    for kind, n in nbytes.items():
        fields = np.repeat(np.arange(256, dtype=np.uint8)[:, None], n, axis=1)  # every byte everywhere
        got = [v for v in subscales.decode(kind, fields) if v is not None]
        lo, hi = subscales.INTEGER_RANGE[kind]
        assert min(int(v.min()) for v in got) == lo and max(int(v.max()) for v in got) == hi, kind


@pytest.mark.parametrize(
    "name, change, field",
    [
        ("q4_k", dict(sub_scales="k3"), "scales_field"),
        ("q4_k", dict(sub_block=None), "sub_scales"),
        ("q4_k", dict(unit=48), "unit"),
        ("q6_k", dict(high_bits=1), "bits"),
        ("q6_k", dict(high_unit=100), "high_unit"),
        ("q2_k", dict(scale="d"), "scale"),
        ("mxfp4", dict(sub_scales="k4"), "scales_field"),
        ("q4_0", dict(high_bits=2), "high_bits"),
        ("q4_k", dict(sub_scales="k5"), "sub_scales"),
    ],
)
def test_invalid_sub_block_rows_are_rejected_naming_the_field(name, change, field):
    with pytest.raises(F.FormatError, match=f"field '{field}'"):
        F.check_row(dataclasses.replace(F.get(name), **change))


def test_int8dot_refuses_sub_block_rows_with_a_clear_error():
    """The int8-dot path takes one scale per block, the K-quants' integer sub-block scales and the FP4
    rows (test_int8dot_kquant); q8_k (an activation format) is refused by its ops, by name, with
    what is allowed (the float gemv decodes it: test_kquant_kernels)."""
    from qkgen.errors import QKGenValueError
    from qkgen.kernels.ops import OPS
    from qkgen.kernels.render import render

    for name in ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "mxfp4", "nvfp4"):
        assert OPS["gemv"].accepts(F.get(name)) and OPS["gemv_int8dot"].accepts(F.get(name)), name
    for name in ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "mxfp4", "nvfp4"):
        assert OPS["gemv"].accepts(F.get(name)), name
        for op in ("gemv_int8dot", "quantize_q8_1") if name == "q8_k" else ("quantize_q8_1",):
            assert not OPS[op].accepts(F.get(name)), (op, name)
            with pytest.raises(QKGenValueError, match=f"format: {op} does not take {name}; allowed: "):
                render(op, name, "opencl")
