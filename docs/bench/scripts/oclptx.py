"""The same kernels on CUDA and on NVIDIA's OpenCL, alone: what each compiler made of one source.
For each case [op, fmt, dtype, knobs] the kernel is rendered for each backend's own target, launched
on hot buffers (W [4096, 14336], x [1, 14336] f16/f32) and timed two ways on both backends: one
launch between two events (median of 50 after 5: OpenCL's profiling events, the device's execution
alone), and 200 back-to-back launches per launch (CUDA: replayed from a CUDA graph, gemv_sweep's
graph_us; OpenCL: between two syncs, host clock, so its enqueue gaps count). OpenCL's PTX (the
program's binary on NVIDIA) is written to argv[2]/<kernel>.ptx for ptxas, each backend's source
beside it (<kernel>.<backend>.src).
argv[1]: JSON list of cases; argv[2]: the folder for the PTX and sources; argv[3]: output JSON."""
import json, os, sys, time
import numpy as np
import qkgen
from qkgen.backends import open_device
from qkgen.kernels.ops.int8dot import q8_1_sizes
from qkgen.runtime.api import weight_values
from qkgen.runtime.plan import Plan

N, K = 4096, 14336
cases, folder, out_json = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
os.makedirs(folder, exist_ok=True)
rng = np.random.default_rng(0)
W = rng.standard_normal((N, K)).astype(np.float32)


def spans_us(dev, kern, args, g, l, reps=200):
    """Per launch of reps back-to-back launches, between a sync before and after (host clock)."""
    if dev.target.backend == "cuda":
        from gemv_sweep import graph_us  # imported only here: it opens the CUDA device
        return graph_us(lambda: dev.launch(kern, args, g, l), reps)
    for _ in range(5):
        dev.launch(kern, args, g, l)
    dev.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        dev.launch(kern, args, g, l)
    dev.synchronize()
    return 1e6 * (time.perf_counter() - t0) / reps


def event_us(dev, kern, args, g, l):
    for _ in range(5):
        dev.time_ms(kern, args, g, l)
    return 1e3 * float(np.median([dev.time_ms(kern, args, g, l) for _ in range(50)]))


def save_binary(be, plan):
    name = plan.ks.name
    if be == "opencl":
        import pyopencl as cl  # built again here: the backend keeps only the kernel
        prg = cl.Program(plan.dev.ctx, plan.ks.source).build(options=plan.dev.build_options(plan.ks))
        with open(os.path.join(folder, name + ".ptx"), "wb") as f:
            f.write(bytes(prg.binaries[0]))
    with open(os.path.join(folder, f"{name}.{be}.src"), "w") as f:
        f.write(plan.ks.source)


results = []
BACKENDS = json.loads(os.environ.get("OCLPTX_BACKENDS", '[["cuda", 0], ["opencl", "NVIDIA"]]'))
for be, dname in BACKENDS:
    dev = open_device(be, dname)
    print(f"== {be}: {dev.target.describe()}", flush=True)
    for op, fmt, dtype, knobs in cases:
        x = rng.standard_normal((1, K)).astype(np.float32 if dtype == "f32" else np.float16)
        like = None
        if be == "cuda":  # torch tensors, so that the launches go to torch's stream and into its graphs
            import torch
            x = like = torch.from_numpy(x).cuda()
        if op == "quantize_q8_1":
            plan = Plan.make(dev, op, qkgen.formats.get("q8_1"), dtype=dtype, **knobs)
            sizes = q8_1_sizes(1, K, "blocks")
            (buf, _, _), = plan.outputs(sizes, like=like).values()
            args = plan.bind({"x": x, "xq": buf}, sizes)
        else:
            qt = qkgen.quantize(W, fmt)
            vals, sizes = weight_values(qt)
            if be == "cuda":  # device tensors: a numpy input's upload is freed later, mid-capture
                vals = {k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in vals.items()}
            sizes.update(N=N, K=K, M=1)
            if op == "gemv_int8dot":
                xs = q8_1_sizes(1, K, "blocks")
                qp = Plan.make(dev, "quantize_q8_1", qkgen.formats.get("q8_1"), dtype=dtype)
                (xqb, xqa, _), = qp.outputs(xs, like=like).values()
                qp.launch({"x": x, "xq": xqb}, xs)
                plan = Plan.make(dev, op, qt.format, dtype=dtype, mmax=1, **knobs)
                inp = {"xq": xqa}  # the array object: usable as an input
            else:
                plan = Plan.make(dev, op, qt.format, dtype=dtype, blocksize=qt.blocksize, mmax=1, **knobs)
                inp = {"x": x}
            (ybuf, _, _), = plan.outputs(sizes, like=like).values()
            args = plan.bind({**vals, **inp, "y": ybuf}, sizes)
        g, l = plan.geometry(sizes)
        save_binary(be, plan)
        r = dict(backend=be, op=op, fmt=fmt, dtype=dtype, knobs=knobs, name=plan.ks.name, grid=g, local=l,
                 event_us=event_us(dev, plan.kernel, args, g, l), span_us=spans_us(dev, plan.kernel, args, g, l))
        print(f"{be:<6} {op:<14} {fmt:<5} {dtype:<4} {json.dumps(knobs):<24} event {r['event_us']:7.2f} us"
              f"  span {r['span_us']:7.2f} us  grid {g} local {l}", flush=True)
        results.append(r)
json.dump(results, open(out_json, "w"), indent=1)
