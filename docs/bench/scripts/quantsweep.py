"""Device quantizer kernels alone (issue 13 item 5): Plan-launched, graph-timed device time over
back-to-back launches on x [4096, 14336] alternating between two copies (past 4x the L2), GB/s of
x read + codes and statistics written, % of the copy ceiling measured in the same run; each
variant's outputs are compared byte for byte with the public call's (qkgen.quantize) first.
argv[1]: JSON list of cases [fmt, opts, dtype, op, overrides]; argv[2]: output JSON."""
import json, sys
import numpy as np, torch, qkgen
from qkgen.backends import open_device
from qkgen.runtime.plan import Plan
from copyceiling import ceiling

dev = open_device("cuda", 0)
N, K = 4096, 14336
TD = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def graph_us(fn, reps=20):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(0); fn(1)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(reps): fn(i)
    g.replay(); torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
    t = []
    for _ in range(7):
        e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
        t.append(e0.elapsed_time(e1) * 1e3 / reps)
    return float(np.median(t))


def sizes_of(fmt, qt, n):
    if fmt.inline:
        return {"nblocks": n // fmt.block, "code_bytes": n // fmt.block * fmt.block_bytes}
    return {"n": n, "units": -(-n // qt.blocksize), "code_bytes": -(-n * fmt.low_bits // 8)}


cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s", flush=True)
rows = []
torch.manual_seed(0)
for fmt_name, opts, dtype, op, ov in json.load(open(sys.argv[1])):
    fmt = qkgen.formats.get(fmt_name)
    xs = [torch.randn(N, K, device="cuda").to(TD[dtype]) for _ in range(2)]
    want = qkgen.quantize(xs[0], fmt_name, **opts)
    kw = {"dtype": dtype, **({"blocksize": want.blocksize} if not fmt.inline else {}), **ov}
    plan = Plan.make(dev, op, fmt, **kw)
    sz = sizes_of(fmt, want, N * K)
    outs = plan.outputs(sz, like=xs[0])
    bufs = {k: b for k, (b, _, _) in outs.items()}
    fn = lambda i: plan.launch({"x": xs[i % 2], **bufs}, sz)
    fn(0); torch.cuda.synchronize()
    equal = bool(torch.equal(outs["data"][1].cpu(), want.data.reshape(-1).cpu()))
    if "absmax" in outs:
        equal &= bool(torch.equal(outs["absmax"][1].cpu(), want.absmax.reshape(-1).cpu()))
    us = graph_us(fn)
    moved = xs[0].numel() * xs[0].element_size() + sum(int(v.numel() * v.element_size()) for k, (_, v, _) in outs.items() if k != "status")
    r = dict(fmt=fmt_name, opts=opts, dtype=dtype, op=op, ov=ov, kernel=plan.ks.name, us=us, bytes=moved,
             pct=100 * moved / (us * 1e-6) / 1e9 / cg, equal=equal)
    rows.append(r)
    print(f"{fmt_name:<10} {dtype:<4} {op:<18} {json.dumps(ov):<22} {us:8.1f} us  {r['pct']:5.1f}% of copy  equal to the public call: {equal}", flush=True)
    del xs, outs, bufs; torch.cuda.empty_cache()
json.dump(dict(ceiling=cg, shape=[N, K], rows=rows), open(sys.argv[2], "w"))
