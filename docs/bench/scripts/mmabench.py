"""The mma GEMV path against the float path, bitsandbytes matmul_4bit and dense f16, public calls,
graph-timed device time (N back-to-back calls captured in one CUDA graph, events around a replay),
cold (weight copies rotated past 4x the L2) and hot, in one run; plus host time per call (wall
time of back-to-back calls). argv[1]: output JSON; argv[2] (optional): shapes NxK,... (default
8192x8192,4096x14336,14336x4096); argv[3] (optional): x's dtype, f16 (default) or bf16; bitsandbytes
and dense then take the weight in that dtype."""
import json, sys, time
import numpy as np, torch, qkgen
import bitsandbytes as bnb
import bitsandbytes.functional as bf
from gemv_sweep import graph_us, L2
from copyceiling import ceiling

def host_us(fn, n=200):
    fn(); torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n): fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6

def timed(fns):
    """(cold, hot) device µs: fns[i] is the call on weight copy i."""
    it = iter(range(10**9))
    cold = graph_us(lambda: fns[next(it) % len(fns)](), reps=len(fns) * 3)
    hot = graph_us(fns[0], reps=20)
    return cold, hot

shapes = [tuple(map(int, s.split("x"))) for s in (sys.argv[2] if len(sys.argv) > 2 else "8192x8192,4096x14336,14336x4096").split(",")]
xdt = {"f16": torch.float16, "bf16": torch.bfloat16}[sys.argv[3] if len(sys.argv) > 3 else "f16"]
cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s; L2 {L2/2**20:.0f} MiB; {torch.cuda.get_device_name()}; x {xdt}", flush=True)
rows = []
for n, k in shapes:
    w = torch.randn(n, k, device="cuda")
    copies = max(2, -(-4 * L2 // (n * k // 2)) + 1)
    qts = [qkgen.quantize(w, "nf4", blocksize=64, nested=True) for _ in range(copies)]
    wbytes = sum(v.numel() * v.element_size() for v in qts[0].arrays().values() if torch.is_tensor(v))
    bnbs = [bf.quantize_4bit(w.to(xdt), blocksize=64, compress_statistics=True, quant_type="nf4") for _ in range(copies)]
    dense = [w.to(xdt).clone() for _ in range(max(2, -(-4 * L2 // (n * k * 2)) + 1))]
    wq = qkgen.dequantize(qts[0], "f32").to(xdt).double()
    for m in (1, 8):
        x = torch.randn(m, k, device="cuda").to(xdt)
        want = x.double() @ wq.T
        impls = {
            "qkgen mma": [lambda q=q: qkgen.gemv(q, x, path="mma") for q in qts],
            "qkgen float": [lambda q=q: qkgen.gemv(q, x, path="float") for q in qts],
            "bnb matmul_4bit": [lambda p=p, s=s: bnb.matmul_4bit(x, p.t(), quant_state=s) for p, s in bnbs],
            "dense": [lambda d=d: x @ d.T for d in dense],
        }
        for name, fns in impls.items():
            y = fns[0]()
            rel = float((y.double() - want).norm() / want.norm())
            cold, hot = timed(fns)
            h = host_us(fns[0])
            nbytes = (n * k * 2 if name == "dense" else wbytes) + m * k * 2
            r = dict(impl=name, shape=f"{n}x{k}", m=m, cold_us=cold, hot_us=hot, host_us=h, rel=rel,
                     pct=100 * nbytes / (cold * 1e-6) / 1e9 / cg)
            rows.append(r)
            print(f"{n}x{k} m{m} {name:<16} cold {cold:6.1f} us ({r['pct']:3.0f}%) hot {hot:6.1f} host {h:6.1f} us/call rel {rel:.1e}", flush=True)
json.dump(dict(ceiling=cg, rows=rows), open(sys.argv[1], "w"))
