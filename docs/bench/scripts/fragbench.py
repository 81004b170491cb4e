"""The int8mma path's weight layouts side by side: public qkgen.gemv(qt, x, path="int8mma",
layout=L) calls, graph-timed (N back-to-back calls in one CUDA graph), cold (weight copies rotated
past 4x the L2) and hot, and the int8dot path at M = 1 for the M = 8 / M = 1 ratio, f32 x.
Runs whichever qkgen is importable (PYTHONPATH picks an older tree for a before/after in one run).
argv[1]: output JSON; argv[2]: formats; argv[3]: Ms of the int8mma rows (comma-separated);
argv[4] (optional): shape NxK (default 4096x14336); argv[5] (optional): Ms of the int8dot rows
(default 1); argv[6] (optional): the int8mma path's layouts (default blocks,fragments)."""
import json, sys
import torch, qkgen
from gemv_sweep import graph_us, L2
from copyceiling import ceiling

fmts, ms = sys.argv[2].split(","), [int(v) for v in sys.argv[3].split(",")]
n, k = map(int, (sys.argv[4] if len(sys.argv) > 4 else "4096x14336").split("x"))
dot_ms = [int(v) for v in (sys.argv[5] if len(sys.argv) > 5 else "1").split(",")]
layouts = (sys.argv[6] if len(sys.argv) > 6 else "blocks,fragments").split(",")
cg = ceiling()
print(f"qkgen from {qkgen.__file__}; copy ceiling {cg:.0f} GB/s; {torch.cuda.get_device_name()}; W [{n}, {k}], f32 x",
      flush=True)
rows = []
torch.manual_seed(0)
for name in fmts:
    w = torch.randn(n, k, device="cuda")
    qt0 = qkgen.quantize(w, name)
    wbytes = sum(v.numel() * v.element_size() for v in qt0.arrays().values() if torch.is_tensor(v))
    qts = [qt0] + [qkgen.quantize(w, name) for _ in range(max(1, -(-4 * L2 // wbytes)))]
    wq = qkgen.dequantize(qt0, "f32").double()
    cases = [(m, "int8dot", None) for m in dot_ms] + [(m, "int8mma", lay) for m in ms for lay in layouts]
    for m, path, layout in cases:
        x = torch.randn(m, k, device="cuda")
        want = x.double() @ wq.T
        kw = {} if layout is None else {"layout": layout}
        fns = [lambda q=q: qkgen.gemv(q, x, path=path, **kw) for q in qts]
        for f in fns:  # every copy's first call (a repacked layout is made then) before any timing
            f()
        rel = float((fns[0]().double() - want).norm() / want.norm())
        it = iter(range(10**9))
        cold = graph_us(lambda: fns[next(it) % len(fns)](), reps=len(fns) * 3)
        hot = graph_us(fns[0], reps=20)
        r = dict(fmt=name, m=m, path=path, layout=layout or "blocks", cold_us=cold, hot_us=hot, rel=rel,
                 pct=100 * (wbytes + m * k * 4) / (cold * 1e-6) / 1e9 / cg)
        rows.append(r)
        print(f"{name:<5} m{m} {path:<8} {r['layout']:<9} cold {cold:6.1f} us ({r['pct']:3.0f}%) hot {hot:6.1f} "
              f"rel {rel:.1e}", flush=True)
    del qts
json.dump(dict(qkgen=qkgen.__file__, ceiling=cg, shape=[n, k], rows=rows), open(sys.argv[1], "w"))
