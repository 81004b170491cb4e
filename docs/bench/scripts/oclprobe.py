"""The int8dot path's two kernels alone on NVIDIA's OpenCL, with and without the knobs CUDA takes by
default (quantize_q8_1's lane_group, gemv_int8dot's word_loads): device time of one launch
(profiling events), median of 50 after 5 untimed, hot, x f16
[1, 14336], W [4096, 14336]; each gemv's y checked against the int8dot reference first.
argv[1]: rows, comma-separated (default q4_0,q4_1,q8_0)."""
import sys
import numpy as np
import qkgen
from qkgen.backends import open_device
from qkgen.kernels.ops.int8dot import int8dot_reference
from qkgen.runtime.api import q8_1_sizes
from qkgen.runtime.plan import Plan

N, K = 4096, 14336
rng = np.random.default_rng(0)
x = rng.standard_normal((1, K)).astype(np.float16)
rows = (sys.argv[1] if len(sys.argv) > 1 else "q4_0,q4_1,q8_0").split(",")


def median_ms(dev, plan, args, sizes):
    g, l = plan.geometry(sizes)
    for _ in range(5):
        dev.time_ms(plan.kernel, args, g, l)
    return float(np.median([dev.time_ms(plan.kernel, args, g, l) for _ in range(50)]))


for be, name in (("opencl", "NVIDIA"),):
    dev = open_device(be, name)
    print(f"== {be}: {dev.target.describe()}", flush=True)
    sizes = q8_1_sizes(1, K, "blocks")
    xq = None
    for lg in (False, True):
        plan = Plan.make(dev, "quantize_q8_1", qkgen.formats.get("q8_1"), dtype="f16", lane_group=lg)
        (buf, arr, dt), = plan.outputs(sizes).values()
        args = plan.bind({"x": x, "xq": buf}, sizes)
        us = 1e3 * median_ms(dev, plan, args, sizes)
        print(f"quantize_q8_1 lane_group={lg!s:<5} {us:7.2f} us  ({plan.ks.name})", flush=True)
        xq = arr  # the array object: usable as an input
    for fmt in rows:
        qt = qkgen.quantize(rng.standard_normal((N, K)).astype(np.float32), fmt)
        want = int8dot_reference(qt, x.astype(np.float32)).reshape(-1)
        gs = {"N": N, "K": K, "M": 1}
        for wl in (False, True):
            plan = Plan.make(dev, "gemv_int8dot", qt.format, dtype="f16", mmax=1, word_loads=wl)
            (ybuf, yarr, ydt), = plan.outputs(gs).values()
            args = plan.bind({"data": qt.data, "xq": xq, "y": ybuf}, gs)
            g, l = plan.geometry(gs)
            dev.launch(plan.kernel, args, g, l); dev.synchronize()
            y = dev.download(yarr, ydt, N).astype(np.float32)
            rel = float(np.linalg.norm(y - want) / np.linalg.norm(want))
            us = 1e3 * median_ms(dev, plan, args, gs)
            print(f"gemv_int8dot {fmt:<5} word_loads={wl!s:<5} {us:7.2f} us  rel {rel:.1e}  ({plan.ks.name})", flush=True)
