"""Tier 1: the format table's invariants. A row that breaks one is rejected at import."""

import dataclasses

import numpy as np
import pytest

import qkgen
from qkgen import formats as F


def test_formats_api_lists_every_row():
    assert [f.name for f in qkgen.formats()] == list(F.FORMATS)
    assert set(F.FORMATS) == {"nf4", "fp4", "blockwise8", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1",
                              "int8", "int4", "int2", "int1"}  # fmt: skip


@pytest.mark.parametrize("fmt", F.ROWS, ids=lambda f: f.name)
def test_row_invariants(fmt):
    assert fmt.block in fmt.blocksizes
    assert fmt.per_byte * fmt.low_bits == 8
    if fmt.inline:
        assert sum(f.nbytes for f in fmt.fields) == fmt.block_bytes
        assert fmt.member("qs").nbytes * 8 == fmt.block * fmt.low_bits
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


def test_rows_the_templates_cannot_decode_are_refused_not_rendered_wrong():
    """K-quant and FP4 rows are defined (reference codecs) but their sub-block scales have no
    decode in the templates yet: every op refuses them by their row facts."""
    from qkgen.formats import kquant, mxfp4
    from qkgen.kernels.ops import OPS

    for row in (*kquant.ROWS, *mxfp4.ROWS):
        for op in OPS:
            assert not OPS[op].accepts(row), (op, row.name)
