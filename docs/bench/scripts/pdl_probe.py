"""A what-if probe: programmatic dependent launch (sm_90) for the two-launch paths. The second
kernel's source gets `griddepcontrol.wait` as its first statement and is launched by
cuLaunchKernelEx with programmatic stream serialization, the first kernel's source gets
`griddepcontrol.launch_dependents` as its first: the second grid may start while the first runs and
waits for it before reading anything. Against the two launches as they are, and the patched sources
launched plainly (the instructions' own cost). Plan-launched, graph-timed (CUDA events around a replay
of N back-to-back pairs), cold and hot, y compared bit for bit. argv[1]: output JSON; argv[2]: cases
NAME:M:DTYPE,... (GGUF rows: quantize_q8_1 + gemv_int8dot at M = 1 or int8mma from the default plans;
nf4/int4 with f32 x: round_to_f16 + gemv_mma). W [4096, 14336]."""
import ctypes, dataclasses, json, sys
import torch, qkgen
from gemv_sweep import graph_us, L2, dev
from copyceiling import ceiling
from qkgen.runtime import api
from qkgen.runtime.plan import Plan, ready
from qkgen.backends.cuda_driver import _params, driver

N, K = 4096, 14336
_, cu = driver()
_ex = cu.function("cuLaunchKernelEx")


class AttrValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("flag", ctypes.c_int)]


class Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", AttrValue)]


class Config(ctypes.Structure):
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint), ("bx", ctypes.c_uint),
                ("by", ctypes.c_uint), ("bz", ctypes.c_uint), ("shared", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(Attr)), ("nattrs", ctypes.c_uint)]


ATTR = Attr(6)  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
ATTR.value.flag = 1
assert ctypes.sizeof(Attr) == 72 and Config.stream.offset == 32, (ctypes.sizeof(Attr), Config.stream.offset)


def patched(plan, stmt):
    src = plan.ks.source
    at = src.index("\n{\n", src.index("__global__")) + 3
    src = src[:at] + f"    asm volatile(\"{stmt}\" ::: \"memory\");\n" + src[at:]
    return Plan(dev, dataclasses.replace(plan.ks, source=src))


def launch_ex(kernel, args, g, l):
    vals, params = _params(kernel, args)
    cfg = Config(g[0] // l[0], 1, 1, l[0], 1, 1, 0, torch.cuda.current_stream().cuda_stream,
                 ctypes.pointer(ATTR), 1)
    rc = _ex(ctypes.byref(cfg), kernel.func, params, None)
    if rc:
        raise RuntimeError(f"cuLaunchKernelEx: {cu.describe(rc)}")


cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s; {torch.cuda.get_device_name()}; W [{N}, {K}]", flush=True)
rows = []
TD = {"f16": torch.float16, "f32": torch.float32}
for case in sys.argv[2].split(","):
    name, m, dt = case.split(":")
    m = int(m)
    w = torch.randn(N, K, device="cuda")
    qt0 = qkgen.quantize(w, name)
    wbytes = sum(v.numel() * v.element_size() for v in qt0.arrays().values() if torch.is_tensor(v))
    qts = [qt0] + [qkgen.quantize(w, name) for _ in range(max(1, -(-4 * L2 // wbytes)))]
    x = torch.randn(m, K, device="cuda").to(TD[dt])
    plans, sizes = api.gemv_plans(qt0, x, None)
    assert len(plans) == 2, [p.ks.name for p in plans]
    first, second = plans
    made = first.outputs(sizes, like=x)
    (yb, ya, _), = second.outputs(sizes, like=x).values()
    sets = []
    for q in qts:
        arrays, _ = api.weight_values(q)
        arrays.update(api.repacked_arrays(q, plans))
        vals = {**arrays, "x": x, "y": yb}
        sets.append((first.bind({**vals, **{k: b for k, (b, _, _) in made.items()}}, sizes),
                     second.bind({**vals, **{k: ready(b) for k, (b, _, _) in made.items()}}, sizes)))
    g1, l1 = first.geometry(sizes)
    g2, l2 = second.geometry(sizes)
    ref = None
    for form in ("plain", "patched_plain", "pdl"):
        f, s = (first, second) if form == "plain" else (patched(first, "griddepcontrol.launch_dependents;"),
                                                         patched(second, "griddepcontrol.wait;"))
        def pair(i, f=f, s=s, form=form):
            a1, a2 = sets[i]
            dev.launch(f.kernel, a1, g1, l1)
            (launch_ex if form == "pdl" else dev.launch)(s.kernel, a2, g2, l2)
        ya.zero_(); pair(0); torch.cuda.synchronize()
        y = ya.clone()
        ref = y if ref is None else ref
        same = bool(torch.equal(y.view(torch.int32) if y.dtype == torch.float32 else y, ref.view(torch.int32) if ref.dtype == torch.float32 else ref))
        it = iter(range(10**9))
        cold = graph_us(lambda: pair(next(it) % len(sets)), reps=len(sets) * 3)
        hot = graph_us(lambda: pair(0), reps=20)
        r = dict(case=case, form=form, kernels=[first.ks.name, second.ks.name], cold_us=cold, hot_us=hot, same=same,
                 pct=100 * (wbytes + m * K * x.element_size()) / (cold * 1e-6) / 1e9 / cg)
        rows.append(r)
        print(f"{case:<12} {form:<13} cold {cold:6.2f} us ({r['pct']:3.0f}%) hot {hot:6.2f}  y same: {same}  "
              f"{first.ks.name} + {second.ks.name}", flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), ceiling_gbs=cg, rows=rows), open(sys.argv[1], "w"), indent=1)
