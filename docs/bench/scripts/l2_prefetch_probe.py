"""A what-if probe: the int8dot path's two launches at M = 1 (quantize_q8_1, then gemv_int8dot), with
quantize_q8_1's source patched to prefetch into L2 the head of every weight row while it runs (the
DRAM is otherwise idle then), against the two launches as they are. Plan-launched, graph-timed
(CUDA events around a replay of N back-to-back pairs), cold (weight copies rotated past 4x the L2)
and hot; y compared with the unpatched pair's. argv[1]: output JSON; argv[2]: formats; argv[3]: x
dtype; argv[4]: bytes prefetched per row, comma-separated (0: no prefetch). W [4096, 14336]."""
import dataclasses, json, sys
import ctypes
import numpy as np, torch, qkgen
from gemv_sweep import graph_us, L2, dev
from copyceiling import ceiling
from qkgen.kernels.source import Arg
from qkgen.runtime.plan import Plan
from qkgen.runtime.api import weight_values, _q8_1_options
from qkgen.kernels.ops.int8dot import ACT, q8_1_sizes
from qkgen.formats import get

N, K = 4096, 14336
fmts = sys.argv[2].split(",")
xdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[sys.argv[3]]
pfs = [int(v) for v in sys.argv[4].split(",")]
PF_ARGS = (Arg("wpf", "in", "u8"), Arg("pf_rows", "scalar", "u32"), Arg("row_bytes", "scalar", "u32"),
           Arg("pf_lines", "scalar", "u32"))
PF_CODE = """
    {   /* probe: every weight row's first pf_lines 128-byte lines into L2, while this kernel runs */
        const uint nth = gridDim.x * blockDim.x;
        for (uint i = blockIdx.x * blockDim.x + threadIdx.x; i < pf_rows * pf_lines; i += nth) {
            const uchar* p = wpf + (size_t)(i / pf_lines) * row_bytes + (size_t)(i % pf_lines) * 128u;
            asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
        }
    }
"""


def patched_quantize(plan):
    src = plan.ks.source
    sig = "    const uint nblocks)\n{\n"
    assert sig in src
    src = src.replace(sig, "    const uint nblocks,\n    const uchar* __restrict__ wpf,\n    const uint pf_rows,\n"
                           "    const uint row_bytes,\n    const uint pf_lines)\n{\n" + PF_CODE)
    return Plan(dev, dataclasses.replace(plan.ks, source=src, args=tuple(plan.ks.args) + PF_ARGS))


cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s; {torch.cuda.get_device_name()}; W [{N}, {K}], x {xdt}, M = 1", flush=True)
rows = []
for name in fmts:
    w = torch.randn(N, K, device="cuda")
    qt0 = qkgen.quantize(w, name)
    wbytes = sum(v.numel() * v.element_size() for v in qt0.arrays().values() if torch.is_tensor(v))
    qts = [qt0] + [qkgen.quantize(w, name) for _ in range(max(1, -(-4 * L2 // wbytes)))]
    row_bytes = wbytes // N
    x = torch.randn(1, K, device="cuda").to(xdt)
    dtype = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}[xdt]
    quant = Plan.make(dev, "quantize_q8_1", get(ACT), dtype=dtype, **_q8_1_options(dev, "blocks"))
    gemv = Plan.make(dev, "gemv_int8dot", qt0.format, dtype=dtype, mmax=1)
    _, sizes = weight_values(qt0)
    sizes.update(N=N, K=K, M=1, **q8_1_sizes(1, K, "blocks"))
    (xqb, xqa, _), = quant.outputs(sizes, like=x).values()
    (yb, ya, _), = gemv.outputs(sizes, like=x).values()
    gq, lq = quant.geometry(sizes)
    gg, lg = gemv.geometry(sizes)
    gbound = [gemv.bind({**{a: v for a, v in q.arrays().items()}, "xq": xqa, "y": yb}, sizes) for q in qts]
    ref = None
    for pf in pfs:
        if pf == 0:
            qb = [quant.bind({"x": x, "xq": xqb}, sizes)] * len(qts)
            qk = quant.kernel
        else:
            pq = patched_quantize(quant)
            lines = -(-pf // 128)
            s2 = {**sizes, "pf_rows": N, "row_bytes": row_bytes, "pf_lines": lines}
            qb = [pq.bind({"x": x, "xq": xqb, "wpf": q.data}, s2) for q in qts]
            qk = pq.kernel

        def pair(i, qb=qb, qk=qk):
            dev.launch(qk, qb[i], gq, lq)
            dev.launch(gemv.kernel, gbound[i], gg, lg)

        pair(0); torch.cuda.synchronize()
        y = ya.view(1, N).clone()
        if ref is None:
            ref = y
        same = bool(torch.equal(y, ref))
        it = iter(range(10**9))
        cold = graph_us(lambda: pair(next(it) % len(qts)), reps=len(qts) * 3)
        hot = graph_us(lambda: pair(0), reps=20)
        r = dict(fmt=name, pf_bytes=pf, cold_us=cold, hot_us=hot, same=same,
                 pct=100 * (wbytes + K * x.element_size()) / (cold * 1e-6) / 1e9 / cg)
        rows.append(r)
        print(f"{name:<6} prefetch {pf:5d} B/row ({pf * N / 2**20:5.1f} MiB) cold {cold:6.2f} us ({r['pct']:3.0f}%) "
              f"hot {hot:6.2f}  y same: {same}", flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), ceiling_gbs=cg, rows=rows), open(sys.argv[1], "w"), indent=1)
