"""Public qkgen.gemv calls on every path a format takes (and the default, path=None), graph-timed
device time (N back-to-back calls captured in one CUDA graph), cold (weight copies rotated past 4x
the L2) and hot, W [N, K]. argv[1]: output JSON; argv[2]: formats (comma-separated);
argv[3] (optional): shape NxK (default 4096x14336); argv[4] (optional): x's dtype, f16, bf16 or f32;
argv[5] (optional): the Ms, comma-separated (default 1,8); argv[6] (optional): the paths to time,
comma-separated (default: every path the format takes; the default path is always timed). The
format name "dense" times torch.matmul(x, W.T) on W in x's dtype, its copies rotated alike."""
import json, sys
import torch, qkgen
from gemv_sweep import graph_us, L2
from copyceiling import ceiling
from qkgen.kernels.ops import get_op
from qkgen.runtime.api import gemv_plans

fmts = sys.argv[2].split(",")
n, k = map(int, (sys.argv[3] if len(sys.argv) > 3 else "4096x14336").split("x"))
xdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[sys.argv[4] if len(sys.argv) > 4 else "f16"]
ms = [int(v) for v in (sys.argv[5] if len(sys.argv) > 5 else "1,8").split(",")]
only = sys.argv[6].split(",") if len(sys.argv) > 6 else None
cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s; {torch.cuda.get_device_name()}; W [{n}, {k}], x {xdt}", flush=True)
rows = []
for name in fmts:
    w = torch.randn(n, k, device="cuda")
    if name == "dense":  # torch's dense product, timed as the qkgen rows are
        ws = [w.to(xdt) for _ in range(max(2, -(-4 * L2 // (w.numel() * w.element_size() // 4 * xdt.itemsize)) + 1))]
        wbytes = ws[0].numel() * ws[0].element_size()
        for m in ms:
            x = torch.randn(m, k, device="cuda").to(xdt)
            it = iter(range(10**9))
            cold = graph_us(lambda: torch.matmul(x, ws[next(it) % len(ws)].T), reps=len(ws) * 3)
            hot = graph_us(lambda: torch.matmul(x, ws[0].T), reps=20)
            r = dict(fmt=name, m=m, path="torch", kernel="matmul", cold_us=cold, hot_us=hot, rel=0.0,
                     pct=100 * (wbytes + m * k * x.element_size()) / (cold * 1e-6) / 1e9 / cg)
            rows.append(r)
            print(f"{name:<5} m{m} torch    (matmul      ) cold {cold:6.1f} us ({r['pct']:3.0f}%) hot {hot:6.1f}", flush=True)
        del ws
        continue
    qt0 = qkgen.quantize(w, name)
    wbytes = sum(v.numel() * v.element_size() for v in qt0.arrays().values() if torch.is_tensor(v))
    qts = [qt0] + [qkgen.quantize(w, name) for _ in range(max(1, -(-4 * L2 // wbytes)))]
    wq = qkgen.dequantize(qt0, "f32").double()
    paths = [p for p, op in (("float", "gemv"), ("int8dot", "gemv_int8dot"), ("int8mma", "gemv_int8mma"),
                                      ("mma", "gemv_mma"))
             if name in get_op(op).formats() and (only is None or p in only)]
    for m in ms:
        x = torch.randn(m, k, device="cuda").to(xdt)
        want = x.double() @ wq.T
        for path in [None] + paths:
            fns = [lambda q=q: qkgen.gemv(q, x, path=path) for q in qts]
            for f in fns:  # every copy's first call (a repacked layout is made then) before any timing
                f()
            rel = float((fns[0]().double() - want).norm() / want.norm())
            it = iter(range(10**9))
            cold = graph_us(lambda: fns[next(it) % len(fns)](), reps=len(fns) * 3)
            hot = graph_us(fns[0], reps=20)
            chosen = [p.ks.op for p in gemv_plans(qt0, x, path)[0]][-1]
            r = dict(fmt=name, m=m, path=path or "default", kernel=chosen, cold_us=cold, hot_us=hot, rel=rel,
                     pct=100 * (wbytes + m * k * x.element_size()) / (cold * 1e-6) / 1e9 / cg)
            rows.append(r)
            print(f"{name:<5} m{m} {r['path']:<8} ({chosen:<12}) cold {cold:6.1f} us ({r['pct']:3.0f}%) hot {hot:6.1f} rel {rel:.1e}", flush=True)
json.dump(dict(ceiling=cg, shape=[n, k], dtype=str(xdt), rows=rows), open(sys.argv[1], "w"))
