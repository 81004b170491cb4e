"""The mma path with f32 x, two ways: x rounded to f16 in every work-group of gemv_mma (one launch)
and x rounded once by round_to_f16 first (two launches), public-call bindings, graph-timed device
time (N back-to-back calls captured in one CUDA graph), cold (weight copies rotated past 4x the L2)
and hot, W [N, K]; and the row's default path at M = 1 with f32 x. argv[1]: output JSON; argv[2]:
formats (comma-separated); argv[3]: shape NxK (default 4096x14336); argv[4]: the Ms (default 1,2,4,8).
Each pair's two ys are compared bit for bit."""
import json, sys
import torch, qkgen
from gemv_sweep import graph_us, L2
from copyceiling import ceiling
from qkgen.runtime import api

fmts = sys.argv[2].split(",")
n, k = map(int, (sys.argv[3] if len(sys.argv) > 3 else "4096x14336").split("x"))
ms = [int(v) for v in (sys.argv[4] if len(sys.argv) > 4 else "1,2,4,8").split(",")]
cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s; {torch.cuda.get_device_name()}; W [{n}, {k}], x f32", flush=True)
rows = []
for name in fmts:
    w = torch.randn(n, k, device="cuda")
    qt0 = qkgen.quantize(w, name)
    wbytes = sum(v.numel() * v.element_size() for v in qt0.arrays().values() if torch.is_tensor(v))
    qts = [qt0] + [qkgen.quantize(w, name) for _ in range(max(1, -(-4 * L2 // wbytes)))]
    for m in ms:
        x = torch.randn(m, k, device="cuda")
        ys = {}
        for form, kw in (("default", dict(path=None)), ("in_kernel", dict(path="mma", round_x=False)),
                         ("round_first", dict(path="mma", round_x=True))):
            if form == "default" and m != 1:
                continue
            bs = [api._bind_gemv(q, x, kw["path"], None, None, True, None, kw.get("round_x")) for q in qts]
            fns = [lambda b=b: b({"x": x}, x) for b in bs]
            ys[form] = fns[0]().clone()
            it = iter(range(10**9))
            cold = graph_us(lambda: fns[next(it) % len(fns)](), reps=len(fns) * 3)
            hot = graph_us(fns[0], reps=20)
            kernels = [p.ks.name for p in api.gemv_plans(qt0, x, kw["path"], round_x=kw.get("round_x"))[0]]
            r = dict(fmt=name, m=m, form=form, kernels=kernels, cold_us=cold, hot_us=hot,
                     pct=100 * (wbytes + m * k * 4) / (cold * 1e-6) / 1e9 / cg)
            rows.append(r)
            print(f"{name:<10} m{m} {form:<11} cold {cold:6.1f} us ({r['pct']:3.0f}%) hot {hot:6.1f}  {' + '.join(kernels)}",
                  flush=True)
        same = torch.equal(ys["in_kernel"].view(torch.int32), ys["round_first"].view(torch.int32))
        rows.append(dict(fmt=name, m=m, bit_identical=same))
        print(f"{name:<10} m{m} rounded first == in kernel, bit for bit: {same}", flush=True)
        assert same
json.dump(dict(device=torch.cuda.get_device_name(), ceiling_gbs=cg, n=n, k=k, rows=rows), open(sys.argv[1], "w"), indent=1)
