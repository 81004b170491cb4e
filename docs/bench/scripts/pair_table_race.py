"""Calls of gemv_mma's byte-pair table (CUDA's default for nf4, fp4 and int4 where K allows it) for
compute-sanitizer's racecheck and initcheck: nested and plain blocks, row and group scales, steps
past the row's end, rounds of row blocks, M = 1, 3 and 8."""
import numpy as np
import qkgen
from qkgen.runtime.plan import Plan

rng = np.random.default_rng(0)
for name, kw, k, m in (("nf4", dict(nested=True), 704, 3), ("nf4", {}, 384, 8), ("int4", dict(scale_mode="group", group_size=32), 320, 8),
                       ("int4", dict(scale_mode="row"), 320, 1), ("fp4", dict(nested=True), 704, 1)):
    qt = qkgen.quantize(rng.standard_normal((41, k)).astype(np.float32), name, **kw)
    y = qkgen.gemv(qt, rng.standard_normal((m, k)).astype(np.float16), path="mma", backend="cuda")
    assert np.isfinite(np.asarray(y, dtype=np.float32)).all(), name
qt = qkgen.quantize(rng.standard_normal((77, 704)).astype(np.float32), "nf4", nested=True)
x = rng.standard_normal((3, 704)).astype(np.float16)
dev = qkgen.backends.open_device("cuda", 0)
plan = Plan.make(dev, "gemv_mma", qt.format, dtype="f16", blocksize=64, nested=True, pairs=True, rounds=3)
sizes = {**qkgen.runtime.api.weight_values(qt)[1], "N": 77, "K": 704, "M": 3}
(buf, arr, _), = plan.outputs(sizes).values()
plan.launch({**qt.arrays(), "x": x, "y": buf}, sizes)
print("PAIR_TABLE_RAN")
