"""A NaN activation on the int8dot path: the q8_1 quantizer lets it win the block maximum (as the
reference does), so its block's d and s are NaN and its codes 0, and y is NaN, not inf."""

import numpy as np
import pytest

import qkgen
from qkgen.backends import get
from qkgen.formats import reference
from qkgen.runtime.api import quantize_q8_1_device

DEVICES = [(b, d.name) for b in ("opencl", "sycl") if get(b).is_available() for d in get(b).devices()]
pytestmark = pytest.mark.skipif(not DEVICES, reason="no OpenCL or SYCL device")


def _f16(blocks: np.ndarray, at: int) -> np.ndarray:
    return np.ascontiguousarray(blocks[:, at : at + 2]).view("<f2").reshape(-1)


@pytest.mark.parametrize("lane_group", [False, True], ids=["work-item", "lane-group"])
@pytest.mark.parametrize("where", DEVICES, ids=lambda w: f"{w[0]}-{w[1]}")
def test_nan_activation(where, lane_group, rng, monkeypatch):
    # lane_group: the int8dot path's quantizer takes a lane group per block (runtime.paths' switch)
    monkeypatch.setattr(qkgen.runtime.paths, "INT8DOT_LANE_GROUP", frozenset({where[0]} if lane_group else ()))
    x = rng.standard_normal((3, 128)).astype(np.float32)
    x[1, 40] = np.nan  # block 1 of row 1
    act = qkgen.formats.get("q8_1")
    got = quantize_q8_1_device(x, backend=where[0], device=where[1]).reshape(-1, act.block_bytes)
    want = reference.quantize(x, "q8_1", allow_nonfinite=True).data.reshape(-1, act.block_bytes)
    nan_block = 1 * 4 + 1
    qs = act.offsets["qs"]
    assert np.array_equal(got[:, qs:], want[:, qs:])  # codes: equal, and 0 in the NaN block
    assert not got[nan_block, qs:].any()
    for field in ("d", "s"):
        g, w = _f16(got, act.offsets[field]), _f16(want, act.offsets[field])
        assert np.isnan(g[nan_block]) and np.isnan(w[nan_block])
        keep = np.arange(len(g)) != nan_block
        assert np.array_equal(g[keep].view(np.uint16), w[keep].view(np.uint16))
    qt = qkgen.quantize(rng.standard_normal((5, 128)).astype(np.float32), "q4_0")
    y = qkgen.gemv(qt, x, path="int8dot", backend=where[0], device=where[1])
    assert np.isnan(y[1]).all() and np.isfinite(y[[0, 2]]).all()
