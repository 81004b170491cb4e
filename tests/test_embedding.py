"""The embedding kernel family (issue 12 item 4): rows of a quantized table by token id, for every
format and variant, bit-equal to the same rows of qkgen.dequantize on the same device."""

import numpy as np
import pytest

import qkgen
from qkgen.errors import QKGenValueError
from qkgen.formats import family_of
from qkgen.formats import reference as ref
from qkgen.interop.lookup import embedding
from qkgen.kernels.ops import get_op
from qkgen.kernels.target import PROFILES

ROWS, K = 37, 128


def variants():
    for fmt in qkgen.formats():
        if not get_op("embedding").accepts(fmt):
            continue
        for var in family_of(fmt).variants(fmt):
            yield pytest.param(fmt.name, var, id=f"{fmt.name}-{'-'.join(f'{k}{v}' for k, v in var.items()) or 'plain'}")


def table(rng, name, var, rows=ROWS, k=K):
    opts = {"nested": var.get("nested", False), "scale_mode": var.get("scale_mode")}
    if "blocksize" in var:
        opts["group_size" if var.get("scale_mode") else "blocksize"] = var["blocksize"]
    opts = {k: v for k, v in opts.items() if v not in (None, False)}
    w = rng.standard_normal((rows, k)).astype(np.float32)
    return qkgen.quantize(w, name, **opts)


def check_rows(rng, name, var, backend, device, dtypes):
    k = K if K % qkgen.formats.get(name).block == 0 else 2 * qkgen.formats.get(name).block  # whole blocks a row
    qt = table(rng, name, var, k=k)
    ids = np.array([5, 0, ROWS - 1, 5, 17], np.uint32)  # repeats and both ends
    for dtype in dtypes:
        got = embedding(qt, ids, dtype, backend=backend, device=device)
        full = qkgen.dequantize(qt, dtype, backend=backend, device=device).reshape(ROWS, k)
        assert got.shape == (ids.size, k)
        assert np.array_equal(got.view(np.uint8), full[ids].view(np.uint8)), dtype
    assert np.array_equal(embedding(qt, ids, backend=backend, device=device), ref.dequantize(qt)[ids])


@pytest.mark.parametrize("name, var", list(variants()))
def test_rows_bit_equal_to_dequantize_opencl(rng, poisoned, name, var):
    check_rows(rng, name, var, "opencl", "Intel", ("f32", "f16", "bf16"))


# SYCL builds cost seconds each on the CPU device: an inline and a nested table format.
@pytest.mark.parametrize("name, var", [("q4_1", {}), ("nf4", {"nested": True})])
def test_rows_bit_equal_to_dequantize_sycl(rng, poisoned, name, var):
    check_rows(rng, name, var, "sycl", None, ("f32", "bf16"))


def test_weights_and_ids_on_the_device(rng, poisoned):
    import pyopencl.array as cla

    from qkgen.backends import open_device

    qt = table(rng, "q8_0", {}, rows=300, k=96)
    dq = qt.to("opencl", "Intel")
    dev = open_device("opencl", "Intel")
    ids = np.array([299, 1, 300, 7], np.uint32)  # 300 is past the end: NaN, nothing read
    out = embedding(dq, cla.to_device(dev.queue, ids), backend="opencl", device="Intel")
    assert isinstance(out, cla.Array) and out.shape == (4, 96)
    host = out.get()
    assert np.array_equal(host[[0, 1, 3]], ref.dequantize(qt)[[299, 1, 7]])
    assert np.isnan(host[2]).all()


def test_k_not_a_multiple_of_the_default_chunk(rng):
    qt = qkgen.quantize(rng.standard_normal((9, 40)).astype(np.float32), "int8", scale_mode="row")
    ids = np.array([8, 2], np.uint32)
    assert np.array_equal(embedding(qt, ids, backend="opencl", device="Intel"), ref.dequantize(qt)[ids])


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_renders_for_every_profile(profile):
    for name, kw in (("nf4", {"nested": True}), ("q5_1", {}), ("int4", {"scale_mode": "group"})):
        ks = qkgen.render("embedding", name, profile, dtype="bf16", **kw)
        assert ks.name.startswith(f"embedding_{name}") and "ids" in [a.name for a in ks.args]


@pytest.mark.parametrize("ids, match", [
    (np.array([1, 2], np.int64), "ids: .*uint32"),
    (np.array([[1, 2]], np.uint32), "ids: .*1-D"),
    (np.array([], np.uint32), "ids: .*non-empty"),
    (np.array([3, 99], np.uint32), r"ids: 99 is past the table's last row; allowed: 0\.\.36"),
    ([1, 2], "ids"),
])  # fmt: skip
def test_bad_ids(rng, ids, match):
    qt = table(rng, "q4_0", {})
    with pytest.raises(QKGenValueError, match=match):
        embedding(qt, ids, backend="opencl", device="Intel")


def test_bad_table(rng):
    with pytest.raises(QKGenValueError, match="qtensor: expected a QTensor"):
        embedding(np.zeros((4, 32), np.float32), np.array([0], np.uint32))
    flat = qkgen.quantize(rng.standard_normal(64).astype(np.float32), "q8_0")
    with pytest.raises(QKGenValueError, match=r"qtensor\.shape: \(64,\); allowed: a 2-D table"):
        embedding(flat, np.array([0], np.uint32))
    with pytest.raises(QKGenValueError, match="dtype"):
        embedding(table(rng, "q8_0", {}), np.array([0], np.uint32), dtype="f64", backend="opencl", device="Intel")
