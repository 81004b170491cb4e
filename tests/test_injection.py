"""Nothing reaches generated C through the format table or render() except as the number or the
identifier it claims to be (issue: code through the format table)."""

import dataclasses

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.errors import FormatError, QKGenValueError
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES, Target

EVIL = "*/\n#error QKGEN_INJECTED\n/*"


@pytest.mark.parametrize("field, value", [
    ("doc", EVIL), ("doc", "ok */ int x;"), ("name", "q4_0 */"), ("zero", "8) + (1.0f/0.0f"),
    ("step", "2u * 0 + 1"), ("nested_block", "256u; evil();"), ("bits", 4.0), ("block", True),
    ("msb_first", "yes"), ("table", ("1.0",) * 16), ("gguf_type", "2"), ("high_bit_field", "qh[0]"),
    ("blocksizes", ("64",)), ("scale_modes", ("row; evil",)),
])  # fmt: skip
def test_row_fields_are_checked_by_type(field, value):
    base = F.get("q5_0" if field == "high_bit_field" else "nf4")
    with pytest.raises(FormatError, match=f"field '{field}'"):
        dataclasses.replace(base, **{field: value})


def test_field_names_are_identifiers():
    with pytest.raises(FormatError, match="field name"):
        F.Field("d */ #error x", "f16")
    with pytest.raises(FormatError, match="ctype"):
        F.Field("d", "f16*")


def test_register_checks_like_the_table():
    row = dataclasses.replace(F.get("nf4"), name="my4")
    assert F.register(row) is row and F.get("my4") is row
    try:
        with pytest.raises(FormatError, match="already registered"):
            F.register(row)
        with pytest.raises(FormatError, match="field 'table'"):
            F.register(dataclasses.replace(row, name="my4b", table=(0.0,) * 15))
        assert "dequantize_my4_bs64_f32" in render("dequantize", "my4", "opencl").source
    finally:
        F.registry._ROWS.pop("my4", None)


def test_a_format_object_is_never_swapped_for_the_registered_row():
    fake = dataclasses.replace(F.get("nf4"), table=tuple(-v for v in F.get("nf4").table))
    with pytest.raises(FormatError, match="not the registered row"):
        render("dequantize", fake, "opencl")
    assert render("dequantize", F.get("nf4"), "opencl").name == "dequantize_nf4_bs64_f32"


@pytest.mark.parametrize("params", [
    dict(fast_decode="x(void){} __kernel void evil"), dict(mmax="8; evil"), dict(wg=1.5), dict(ept=-16),
    dict(wg=2**30), dict(nested="yes"), dict(scale_mode=["row"]), dict(dtype="f32 */"), dict(blocksize="64"),
])  # fmt: skip
def test_render_parameters_are_checked(params):
    fmt = "int4" if "scale_mode" in params else "nf4"
    op = "gemv" if "fast_decode" in params or "mmax" in params else "dequantize"
    with pytest.raises(QKGenValueError):
        render(op, fmt, "opencl", **params)


@pytest.mark.parametrize("change", [
    dict(name="x */ evil"), dict(lang="C\n#error"), dict(arch="sm_90 */"), dict(fp16="yes"),
    dict(subgroup_size=12), dict(subgroup_size=-16), dict(backend="metal"), dict(inline_ptx=1),
    dict(inline_ptx=True),  # inline PTX is an OpenCL capability (CUDA's dialect has intrinsics)
])  # fmt: skip
def test_targets_are_checked(change):
    with pytest.raises(QKGenValueError):
        dataclasses.replace(PROFILES["cuda-sm90"], **change)


def test_every_profile_renders_a_clean_header():
    for t in PROFILES.values():
        src = render("dequantize", "q4_0", t).source
        header = src.split("*/", 1)[0]
        assert t.describe() in header and "\n#" not in header
        assert isinstance(t, Target)


def test_quantize_rejects_what_it_cannot_represent(rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    for bad, match in [
        (np.float32(1.0), "at least one dimension"), (x.astype(np.complex64), "complex64"),
        (x > 0, "bool"), (np.array(["a", "b"]), "<U1"), (x.view(np.uint16), "bf16 bit patterns"),
    ]:  # fmt: skip
        with pytest.raises(QKGenValueError, match=match):
            qkgen.quantize(bad, "nf4")
    for value in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[2, 5] = value
        with pytest.raises(QKGenValueError, match=r"at index \(2, 5\) is not finite"):
            qkgen.quantize(y, "nf4")
        qt = qkgen.quantize(y, "nf4", allow_nonfinite=True)  # explicit: that block decodes to NaN/inf
        assert not np.isfinite(qkgen.formats.reference.dequantize(qt)[2, :64]).all()
    with pytest.raises(QKGenValueError, match="overflows q8_0's storage"):
        qkgen.quantize(np.full((1, 32), 1e30, np.float32), "q8_0")
    with pytest.raises(QKGenValueError, match="scale_mode: only plain integer formats"):
        qkgen.quantize(x, "nf4", scale_mode="group")
    assert qkgen.quantize([[1, 2, 3, 4] * 8], "q8_0").shape == (1, 32)  # integer sequences are numbers


def test_qtensor_fields_are_checked(rng):
    qt = qkgen.quantize(rng.standard_normal((4, 64)).astype(np.float32), "nf4", nested=True)
    with pytest.raises(QKGenValueError, match="shape"):
        F.validate(dataclasses.replace(qt, shape=(4.0, 64)))
    with pytest.raises(QKGenValueError, match="shape"):
        F.validate(dataclasses.replace(qt, shape=("4", "64")))
    with pytest.raises(QKGenValueError, match="absmax: not part of nf4"):
        F.validate(dataclasses.replace(qt, absmax=np.ones(4, np.float32)))
    with pytest.raises(QKGenValueError, match="fast_decode"):
        qkgen.gemv(qkgen.quantize(rng.standard_normal((4, 64)).astype(np.float32), "q4_0"),
                   np.ones((1, 64), np.float32), fast_decode="no")  # fmt: skip
