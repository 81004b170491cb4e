"""Kernel-level GEMV / dequantize probe: Plan-launched (no API host path), graph-timed device time,
cold (weights rotated past 4x L2) and hot; render overrides per variant. argv[1]: JSON list of
cases [fmt, kw, n, k, m, dtype, overrides] (overrides may name "op": "gemv_int8dot", "gemv_int8mma",
"gemv_int8mma_sub" or
"dequantize"; dequantize ignores m and checks bit-equality with the reference (and may take "patch" too); gemv_int8dot may take
"layout": "planes": every rotated weight copy repacked once by repack_planes, x quantized to q8_1
planes, neither timed; or "x_planes": true, x alone in planes; the float and mma ops may take
"patch": [[old, new], ...], strings replaced in the rendered source, for what-if experiments, as may the
int8 ops); argv[2]: output JSON."""
import os, sys, json
ONCE = bool(os.environ.get("PROBE_ONCE"))
import numpy as np, torch, qkgen
from qkgen.backends import open_device
from qkgen.runtime.plan import Plan

dev = open_device("cuda", 0)
L2 = torch.cuda.get_device_properties(0).L2_cache_size
rng = np.random.default_rng(0)
TD = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}

from copyceiling import ceiling  # noqa: E402 (the script folder is on sys.path)
from probe_loads import vector_loads  # noqa: E402

def graph_us(fn, reps):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(); fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps): fn()
    g.replay(); torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
    t = []
    for _ in range(7):
        e0.record(); g.replay(); e1.record(); torch.cuda.synchronize()
        t.append(e0.elapsed_time(e1) * 1e3 / reps)
    return float(np.median(t))

_W = {}
def weights(fmt, kw, n, k):
    key = (fmt, json.dumps(kw), n, k)
    if key not in _W:
        w = rng.standard_normal((n, k)).astype(np.float32)
        try:  # on the device (the generated quantizer, bytes equal to the reference's): seconds, not minutes
            qt = qkgen.quantize(torch.from_numpy(w).cuda(), fmt, **kw)
        except qkgen.QKGenValueError:  # a variant the device quantizer refuses (int1)
            qt = qkgen.quantize(w, fmt, **kw)
        dev_arr = lambda v: v.clone() if torch.is_tensor(v) else torch.from_numpy(np.ascontiguousarray(v)).cuda()
        wbytes = sum(int(v.numel() * v.element_size()) if torch.is_tensor(v) else int(np.asarray(v).nbytes)
                     for v in qt.arrays().values())
        copies = max(1, -(-4 * L2 // wbytes) + 1)
        arrs = [{a: dev_arr(v) for a, v in qt.arrays().items()} for _ in range(copies)]
        wd = qkgen.dequantize(qt, "f32", backend="cuda")
        wd = wd if torch.is_tensor(wd) else torch.from_numpy(wd).cuda()
        wd = wd.reshape(n, k)
        _W.clear(); _P.clear(); torch.cuda.empty_cache()
        _W[key] = (qt, arrs, wbytes, wd)
    return _W[key]

def patched(plan, patch, ov):
    """plan with each [old, new] of patch replaced in its rendered source (an experiment), noted in ov."""
    if not patch:
        return plan
    import dataclasses
    src = plan.ks.source
    for old, new in patch:
        assert old in src, old
        src = src.replace(old, new)
    ov["patch"] = patch
    return Plan(dev, dataclasses.replace(plan.ks, source=src))

def run(fmt, kw, n, k, m, dtype, ov, op="gemv"):
    qt, arrs, wbytes, wd = weights(fmt, kw, n, k)
    x = torch.randn(m, k, device="cuda").to(TD[dtype])
    ov = dict(ov)
    op = ov.pop("op", op)
    if op == "dequantize":
        return run_dequantize(qt, arrs, wbytes, wd, fmt, kw, n, k, dtype, ov)
    if op in ("gemv_int8dot", "gemv_int8mma", "gemv_int8frag", "gemv_int8mma_sub", "gemv_int8frag_sub"):
        mmax = {"mmax": 1 if m == 1 else 8} if op == "gemv_int8dot" else {}  # the mma kernels take any M <= 8
        loads = ov.pop("loads", None)  # an experiment: misaligned runs through aligned vectors (vector_loads)
        patch = ov.pop("patch", None)
        with vector_loads(loads):
            plan = patched(Plan.make(dev, op, qt.format, dtype=dtype, **mmax, **ov), patch, ov)
        if loads:
            ov["loads"] = loads
        from qkgen.runtime.api import quantize_q8_1_device
        layout = ov.get("layout", "blocks")
        # gemv_int8frag reads x in its own fragments layout (ops.int8dot: quantize_q8_1's "fragments")
        xlayout = "planes" if ov.get("x_planes") else layout  # x_planes: x in planes, W in blocks
        xq = quantize_q8_1_device(x, layout="fragments" if op in ("gemv_int8frag", "gemv_int8frag_sub") else xlayout)
        if layout == "planes":  # each rotated copy repacked once, as the runtime does per weight
            arrs = [{"planes": planes_of(qt, a)} for a in arrs]
        if op == "gemv_int8frag":  # each rotated copy in the fragments layout (made on the host, not timed)
            from qkgen.kernels.ops.int8frag import to_fragments
            fr = torch.from_numpy(to_fragments(qt.format, qt.to_host().data, n, k))
            arrs = [{"fragments": fr.cuda()} for _ in arrs]
        if op == "gemv_int8frag_sub":  # the super-block rows' own fragments layout (host-made, not timed)
            from qkgen.kernels.ops.int8frag_sub import to_sub_fragments
            fr = torch.from_numpy(to_sub_fragments(qt.format, qt.to_host().data, n, k))
            arrs = [{"fragments": fr.cuda()} for _ in arrs]
    else:
        mmax = {} if op == "gemv_mma" else {"mmax": 1 if m == 1 else 8}  # gemv_mma takes any M <= 8
        patch = ov.pop("patch", None)  # an experiment: [[old, new], ...] replaced in the rendered source
        plan = patched(Plan.make(dev, op, qt.format, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                                 scale_mode=qt.scale_mode, **mmax, **ov), patch, ov)
    from qkgen.runtime.api import weight_values
    _, sizes = weight_values(qt)
    sizes.update(N=n, K=k, M=m)
    (ybuf, yarr, _), = plan.outputs(sizes, like=x).values()
    y = yarr.view(m, n)
    g, l = plan.geometry(sizes)
    int8 = op in ("gemv_int8dot", "gemv_int8mma", "gemv_int8frag", "gemv_int8mma_sub", "gemv_int8frag_sub")
    vals = {"xq": xq, "y": ybuf} if int8 else {"x": x, "y": ybuf}
    bound = [plan.bind({**a, **vals}, sizes) for a in arrs]  # bound once: only pointers and scalars
    launch = lambda i: dev.launch(plan.kernel, bound[i], g, l)
    launch(0); torch.cuda.synchronize()
    if ONCE:
        return dict(fmt=fmt, shape=f"{n}x{k}", m=m, dtype=dtype, ov=ov, cold_us=1, hot_us=1, bytes=0, rel=0, name=plan.ks.name)
    wr = wd.half().float() if op == "gemv_mma" else wd  # the mma path's weight: each value rounded to f16
    ref = x.float() @ wr.T if not int8 else torch.from_numpy(__import__("qkgen").kernels.ops.int8dot.int8dot_reference(qt.to_host(), x.float().cpu().numpy())).float().cuda()
    rel = float((y.float() - ref).norm() / ref.norm())
    it = iter(range(10**9))
    cold = graph_us(lambda: launch(next(it) % len(arrs)), reps=len(arrs) * 3)
    hot = graph_us(lambda: launch(0), reps=20)
    return dict(fmt=fmt + ("+n" if kw.get("nested") else ""), shape=f"{n}x{k}", m=m, dtype=dtype, ov=ov,
                cold_us=cold, hot_us=hot, bytes=wbytes + m * k * x.element_size(), rel=rel, name=plan.ks.name,
                **func_attrs(plan.kernel))

def func_attrs(kernel):
    """The kernel's registers a thread and local (spill) bytes, from the driver."""
    import ctypes
    lib, v = ctypes.CDLL("libcuda.so.1"), ctypes.c_int()
    out = {}
    for key, attr in (("regs", 4), ("spill_bytes", 3)):  # CU_FUNC_ATTRIBUTE_NUM_REGS, _LOCAL_SIZE_BYTES
        out[key] = v.value if lib.cuFuncGetAttribute(ctypes.byref(v), attr, kernel.func) == 0 else -1
    return out

_P = {}
def planes_of(qt, a):
    """The planes layout of one device copy of qt's blocks (repack_planes, launched once), cached."""
    key = id(a["data"])
    if key not in _P:  # the QTensor holds its planes: kept here with it
        from qkgen.runtime.api import weight_planes
        copy = qt.with_arrays(data=a["data"])
        _P[key] = (weight_planes(copy, dev), copy, a["data"])
    return _P[key][0]

def run_dequantize(qt, arrs, wbytes, wd, fmt, kw, n, k, dtype, ov):
    from qkgen.runtime.api import weight_values
    patch = ov.pop("patch", None)  # an experiment, as for gemv
    plan = patched(Plan.make(dev, "dequantize", qt.format, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                             scale_mode=qt.scale_mode, **ov), patch, ov)
    _, sizes = weight_values(qt)
    like = torch.empty(1, device="cuda", dtype=TD[dtype])
    (obuf, oarr, _), = plan.outputs(sizes, like=like).values()
    g, l = plan.geometry(sizes)
    bound = [plan.bind({**a, "out": obuf}, sizes) for a in arrs]
    launch = lambda i: dev.launch(plan.kernel, bound[i], g, l)
    launch(0); torch.cuda.synchronize()
    out = oarr.view(n, k)
    exact = bool(torch.equal(out, wd.to(TD[dtype])))
    it = iter(range(10**9))
    cold = graph_us(lambda: launch(next(it) % len(arrs)), reps=len(arrs) * 3)
    hot = graph_us(lambda: launch(0), reps=20)
    return dict(fmt=fmt + ("+n" if kw.get("nested") else ""), shape=f"{n}x{k}", m=0, dtype=dtype, ov=ov,
                cold_us=cold, hot_us=hot, bytes=wbytes + n * k * out.element_size(), rel=0.0 if exact else 1.0,
                name=plan.ks.name)

if __name__ == "__main__":
    cg = 1.0 if ONCE else ceiling()
    print(f"copy ceiling {cg:.0f} GB/s; L2 {L2/2**20:.0f} MiB", flush=True)
    rows = []
    for case in json.loads(open(sys.argv[1]).read()):
        fmt, kw, n, k, m, dtype, ov = case
        try:
            r = run(fmt, kw, n, k, m, dtype, ov)
            r["op"] = ov.get("op", "gemv")
        except Exception as e:
            print(f"{case}: ERROR {type(e).__name__}: {str(e)[:300]}", flush=True); continue
        r["pct"] = 100 * r["bytes"] / (r["cold_us"] * 1e-6) / 1e9 / cg
        rows.append(r)
        print(f"{r['fmt']:<8} {r['shape']:>10} m{m} {dtype:<4} {json.dumps(ov):<34} cold {r['cold_us']:6.1f} us ({r['pct']:3.0f}%) hot {r['hot_us']:6.1f}  rel {r['rel']:.1e} regs {r.get('regs', '-')}/{r.get('spill_bytes', '-')}", flush=True)
    json.dump(dict(ceiling=cg, rows=rows), open(sys.argv[2], "w"))
