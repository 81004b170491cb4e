"""Needs the tree of commit 0bb2df1 (x_inline was reverted after this probe, run 132).
gemv_int8dot with x_inline (one launch: each lane quantizes the q8_1 block of x it reads) against
the default two launches (quantize_q8_1, then gemv_int8dot on its bytes). Plan-launched,
graph-timed (CUDA events around a replay of N back-to-back launches or pairs), cold (weights rotated
past 4x L2) and hot, y compared bit for bit with the two launches'. argv[1]: output JSON; argv[2]:
cases NAME:M:DTYPE,... (the GGUF block rows); argv[3]: a JSON list of gemv_int8dot knob sets for
the fused kernel ({} its defaults). W [4096, 14336]; argv[4] (optional): NxK."""
import json, sys
import torch, qkgen
from gemv_sweep import graph_us, L2, dev, func_attrs
from copyceiling import ceiling
from qkgen.runtime import api
from qkgen.runtime.plan import Plan, ready

N, K = (int(v) for v in (sys.argv[4] if len(sys.argv) > 4 else "4096x14336").split("x"))
KNOBS = json.loads(sys.argv[3])
TD = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s; {torch.cuda.get_device_name()}; W [{N}, {K}]", flush=True)
rows = []
for case in sys.argv[2].split(","):
    name, m, dt = case.split(":")
    m = int(m)
    w = torch.randn(N, K, device="cuda")
    qt0 = qkgen.quantize(w, name)
    wbytes = sum(v.numel() * v.element_size() for v in qt0.arrays().values() if torch.is_tensor(v))
    qts = [qt0] + [qkgen.quantize(w, name) for _ in range(max(1, -(-4 * L2 // wbytes)))]
    x = torch.randn(m, K, device="cuda").to(TD[dt])
    plans, sizes = api.gemv_plans(qt0, x, "int8dot")
    first, second = plans
    made = first.outputs(sizes, like=x)
    (yb, ya, _), = second.outputs(sizes, like=x).values()
    arrays = [api.weight_values(q)[0] for q in qts]
    pairs = [(first.bind({**a, "x": x, **{k: b for k, (b, _, _) in made.items()}}, sizes),
              second.bind({**a, "y": yb, **{k: ready(b) for k, (b, _, _) in made.items()}}, sizes)) for a in arrays]
    g1, l1 = first.geometry(sizes)
    g2, l2 = second.geometry(sizes)

    def pair(i):
        a1, a2 = pairs[i]
        dev.launch(first.kernel, a1, g1, l1)
        dev.launch(second.kernel, a2, g2, l2)

    forms = [("two launches", pair, f"{first.ks.name} + {second.ks.name}", {})]
    for knobs in KNOBS:
        plan = Plan.make(dev, "gemv_int8dot", qt0.format, dtype=dt, mmax=1 if m == 1 else 8, x_inline=True, **knobs)
        bound = [plan.bind({**a, "x": x, "y": yb}, sizes) for a in arrays]
        g, l = plan.geometry(sizes)
        forms.append((json.dumps(knobs), lambda i, p=plan, b=bound, g=g, l=l: dev.launch(p.kernel, b[i], g, l),
                      plan.ks.name, func_attrs(plan.kernel)))
    ref = None
    for form, fn, kernels, *attrs in forms:
        ya.fill_(float("nan")); fn(0); torch.cuda.synchronize()
        bits = ya.view(torch.int16 if ya.element_size() == 2 else torch.int32).clone()
        ref = bits if ref is None else ref
        same = bool(torch.equal(bits, ref))
        it = iter(range(10**9))
        cold = graph_us(lambda: fn(next(it) % len(arrays)), reps=len(arrays) * 3)
        hot = graph_us(lambda: fn(0), reps=20)
        r = dict(case=case, form=form, kernels=kernels, cold_us=cold, hot_us=hot, same=same, **(attrs[0] if attrs else {}),
                 pct=100 * (wbytes + m * K * x.element_size()) / (cold * 1e-6) / 1e9 / cg)
        rows.append(r)
        print(f"{case:<12} {form:<34} cold {cold:6.2f} us ({r['pct']:3.0f}%) hot {hot:6.2f}  y same: {same}  "
              f"regs {r.get('regs', '-')}/{r.get('spill_bytes', '-')}  {kernels}", flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), ceiling_gbs=cg, rows=rows), open(sys.argv[1], "w"), indent=1)
