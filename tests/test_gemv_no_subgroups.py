"""The float GEMV's local-memory reduction (devices without sub-groups: NVIDIA's OpenCL, pocl) run
on the Intel CPU OpenCL device, which has sub-groups, by rendering for its own target with the
sub-groups taken away: every row, M and tail of the row groups within the f32 bound."""

import dataclasses

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.formats import reference
from qkgen.kernels.ops.gemv import gemv_reference
from qkgen.kernels.render import render
from qkgen.runtime.api import weight_values
from qkgen.runtime.plan import Plan

opencl = get("opencl")
pytestmark = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")

CASES = [("q4_0", {}), ("q8_0", {}), ("q5_1", {}), ("nf4", {"nested": True}), ("int4", {"scale_mode": "row"}),
         ("q4_k", {})]  # fmt: skip


class _NoSubgroupPlan(Plan):
    @classmethod
    def make(cls, dev, op, fmt, **kw):
        t = dataclasses.replace(dev.target, subgroup_size=0, name=dev.target.name + "-no-subgroups")
        return cls(dev, render(op, fmt, t, **kw))


@pytest.mark.parametrize("name,kw", CASES, ids=lambda c: c if isinstance(c, str) else "-".join(map(str, c)))
@pytest.mark.parametrize("mmax,m", [(1, 1), (8, 3), (8, 8)])
@pytest.mark.parametrize("n", [37, 64])
def test_local_memory_reduction(name, kw, mmax, m, n, rng, poisoned):
    fmt = F.get(name)
    k = 512
    w = rng.standard_normal((n, k)).astype(np.float32)
    qt = reference.quantize(w, fmt, **kw)
    x = rng.standard_normal((m, k)).astype(np.float32)
    dev = open_device("opencl", 0)
    plan = _NoSubgroupPlan.make(dev, "gemv", fmt, dtype="f32", blocksize=qt.blocksize, nested=qt.nested,
                                scale_mode=qt.scale_mode, mmax=mmax)  # fmt: skip
    assert "sub_group" not in plan.ks.source and "barrier" in plan.ks.source
    arrays, sizes = weight_values(qt)
    sizes.update(N=n, K=k, M=m)
    if qt.scale_mode == "group":
        sizes["groups_per_row"] = k // qt.blocksize
    ((ybuf, yarr, _),) = plan.outputs(sizes).values()
    plan.launch({**arrays, "x": x, "y": ybuf}, sizes)
    y = dev.download(yarr, "f32", m * n).reshape(m, n)
    ref = gemv_reference(qt, x)
    err = np.abs(y - ref).max() / np.abs(ref).max()
    assert err < 1e-5, err
