"""Host µs per call on CUDA with torch tensors: warm up, N back-to-back calls, one synchronize."""
import cProfile, pstats, statistics, sys, time
import numpy as np, torch
import qkgen
from qkgen.formats import reference as ref

tag, N = sys.argv[1], 2000
dev = "cuda"


def host_us(f, n=N, warm=50, rounds=5):
    for _ in range(warm):
        f()
    torch.cuda.synchronize()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e6 / n)
    return min(out), statistics.median(out)


rng = np.random.default_rng(0)
w = rng.standard_normal((4096, 4096)).astype(np.float32)
cq = lambda qt: qt.with_arrays(**{k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in qt.arrays().items()})
nf4 = cq(ref.quantize(w, "nf4", nested=True))
q40 = cq(ref.quantize(w, "q4_0"))
xb = torch.randn(1, 4096, device=dev, dtype=torch.bfloat16)
xh = torch.randn(1, 4096, device=dev, dtype=torch.float16)
xb4 = torch.randn(4, 4096, device=dev, dtype=torch.bfloat16)
rows = [
    ("qkgen.gemv nf4 nested 4096x4096 bf16 M=1", lambda: qkgen.gemv(nf4, xb)),
    ("qkgen.gemv nf4 nested 4096x4096 bf16 M=4", lambda: qkgen.gemv(nf4, xb4)),
    ("qkgen.gemv q4_0 4096x4096 bf16 M=1", lambda: qkgen.gemv(q40, xb)),
    ("qkgen.gemv q4_0 4096x4096 f16 M=1", lambda: qkgen.gemv(q40, xh)),
    ("qkgen.gemv q4_0 4096x4096 f16 M=1 int8dot", lambda: qkgen.gemv(q40, xh, path="int8dot")),
    ("qkgen.dequantize nf4 nested 4096x4096 bf16", lambda: qkgen.dequantize(nf4, "bf16")),
    ("qkgen.dequantize q4_0 4096x4096 f16", lambda: qkgen.dequantize(q40, "f16")),
]
try:
    import bitsandbytes as bnb
    import bitsandbytes.functional as F

    wt = torch.from_numpy(w).to(dev, torch.bfloat16)
    qw, st = F.quantize_4bit(wt, blocksize=64, compress_statistics=True, quant_type="nf4")
    rows += [("bnb.matmul_4bit nf4 nested bf16 M=1", lambda: bnb.matmul_4bit(xb, qw.t(), quant_state=st)),
             ("bnb.functional.dequantize_4bit nf4 nested bf16", lambda: F.dequantize_4bit(qw, st))]
except Exception as e:
    print("bitsandbytes:", type(e).__name__, e)
# f32 x at M = 8 on the mma path: x rounded to f16 by a launch of its own (the CUDA default from M = 2),
# and, on a second copy of the weight whose first call was bound with that switched off, in the kernel
xf8 = torch.randn(8, 4096, device=dev, dtype=torch.float32)
nf4_one = cq(ref.quantize(w, "nf4", nested=True))
import qkgen.runtime.api as _api
_round, _api.default_round_x = _api.default_round_x, lambda *a: False
qkgen.gemv(nf4_one, xf8)  # bound now, one launch; later calls reuse the binding
_api.default_round_x = _round
rows += [("qkgen.gemv nf4 nested 4096x4096 f32 M=8 (x rounded first)", lambda: qkgen.gemv(nf4, xf8)),
         ("qkgen.gemv nf4 nested 4096x4096 f32 M=8 (one launch)", lambda: qkgen.gemv(nf4_one, xf8))]
wd = torch.from_numpy(w).to(dev, torch.bfloat16)
rows.append(("torch.matmul dense bf16 M=1", lambda: torch.matmul(xb, wd.t())))
try:
    from qkgen.torch import QuantLinear

    ql = QuantLinear(ref.quantize(w, "nf4", nested=True))
    rows.insert(2, ("QuantLinear nf4 nested bf16 M=1 (torch custom op)", lambda: ql(xb)))
except Exception as e:
    print("QuantLinear:", type(e).__name__, e)


def enqueue_us(f, n=300, rounds=3):
    out = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        out.append((time.perf_counter() - t0) * 1e6 / n)
        torch.cuda.synchronize()
    return min(out)


def device_us(f, n=20):
    try:
        g, s = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(n):
                f()
        g.replay()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            g.replay()
        e1.record()
        torch.cuda.synchronize()
        return f"{e0.elapsed_time(e1) * 1e3 / (10 * n):6.1f}"
    except Exception as e:
        torch.cuda.synchronize()
        return f"n/a ({type(e).__name__})"


print(f"[{tag}] {torch.cuda.get_device_name()} torch {torch.__version__}; wall: N={N} back-to-back calls, "
      "one synchronize, min / median of 5 rounds; enqueue: 300 calls after a synchronize, no wait (min of 3); "
      "device: graph replay of 20 calls")
for name, f in rows:
    lo, med = host_us(f)
    enq = enqueue_us(f)
    dv = device_us(f) if tag == "new" else "-"
    print(f"[{tag}] {name:52s} wall {lo:7.1f} {med:7.1f} | enqueue {enq:6.1f} | device {dv} us/call")
if tag == "new":
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(N):
        qkgen.gemv(nf4, xb)
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(18)
if tag == "new":
    # Where a warm qkgen.gemv's time goes (nf4 nested bf16 M=1), each part timed alone.
    from qkgen.backends.cuda_arrays import TorchPtr

    bound = next(b for k, b in nf4._qkgen_calls.items() if k[0] is torch.Tensor and k[2] == xb.shape)
    step = bound.steps[0]
    names, run = step[2], step[-1]
    y0 = torch.empty(1, 4096, dtype=torch.bfloat16, device=dev)
    vals = [TorchPtr(xb.data_ptr()) if n == "x" else TorchPtr(y0.data_ptr()) for n in names]
    d0 = torch.device("cuda", 0)
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    parts = [
        ("qkgen.gemv (whole call)", lambda: qkgen.gemv(nf4, xb)),
        ("Bound.call (no key / cache lookup)", lambda: bound.call({"x": xb}, xb)),
        ("launcher alone (PackedLaunch: stream, lock, cuLaunchKernel)", lambda: run(vals)),
        ("torch.empty((1, 4096), bf16, cuda:0)", lambda: torch.empty((1, 4096), dtype=torch.bfloat16, device=d0)),
        ("x.new_empty((1, 4096))", lambda: xb.new_empty((1, 4096))),
        ("torch raw current stream", (lambda: raw(0)) if raw else (lambda: torch.cuda.current_stream(0).cuda_stream)),
    ]
    for name, f in parts:
        lo, med = host_us(f, rounds=3)
        print(f"[part] {name:62s} {lo:6.2f} {med:6.2f} us/call")
    # enqueue only: 300 calls after a synchronize (the launch queue never fills)
    for name, f in rows[:1] + rows[5:6]:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(300):
            f()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        print(f"[enqueue] {name:50s} {(t1 - t0) * 1e6 / 300:6.1f} us/call (300 calls, no wait)")
    # device time per call: 50 calls captured in one CUDA graph, replayed between events
    for name, f in rows[:1] + rows[5:6]:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(50):
                f()
        g.replay()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            g.replay()
        e1.record()
        torch.cuda.synchronize()
        print(f"[device] {name:50s} {e0.elapsed_time(e1) * 1e3 / 500:6.1f} us/call (graph replay)")
