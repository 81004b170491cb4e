"""Where a launch's host time goes: enqueue time per call (300 calls after a synchronize, no wait,
min of 5 rounds) of qkgen's PackedLaunch and of its parts, of the same cuLaunchKernel made other
ways, and of torch's own launches on this host. The kernel: q4_0's gemv_int8dot at M = 1, f16 x,
4096 x 4096 (its device time is below any row's host time). argv[1]: output JSON."""
import ctypes, json, sys, time
import torch, qkgen
from qkgen.runtime import api
from qkgen.backends.cuda_arrays import TorchPtr

dev = torch.device("cuda", 0)
qt = qkgen.quantize(torch.randn(4096, 4096, device=dev), "q4_0")
x = torch.randn(1, 4096, device=dev, dtype=torch.float16)
y = qkgen.gemv(qt, x)  # warm: the Bound call and its launchers made
bound = next(iter(qt._qkgen_calls.values()))
steps = bound.steps
assert len(steps) == 2, [s[2] for s in steps]
names, pl = steps[1][2], steps[1][-1]  # the product's PackedLaunch and the names it takes per call
vals = [TorchPtr(x.data_ptr()) if n == "x" else TorchPtr(y.data_ptr()) for n in names]
alloc_xq = next(o[3] for o in steps[0][0] if o[0] == "xq")  # the quantize step's output allocator
alloc_y = next(o[3] for o in steps[1][0] if o[0] == "y")
cu = pl.cu
stream = torch._C._cuda_getCurrentRawStream(0)
sv = ctypes.c_void_p(stream)
getcur = cu.function("cuCtxGetCurrent")
cur = ctypes.c_void_p()
curp = ctypes.pointer(cur)


def enqueue_us(f, n=300, rounds=5):
    best = 1e9
    for _ in range(rounds):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        best = min(best, (t1 - t0) * 1e6 / n)
    return best


parts = [
    ("qkgen.gemv q4_0 f16 M=1 (two launches, whole call)", lambda: qkgen.gemv(qt, x)),
    ("Bound call (allocations and both launches)", lambda: bound({"x": x}, x)),
    ("PackedLaunch call (stream, lock, slots, cuCtxGetCurrent, cuLaunchKernel)", lambda: pl(vals)),
    ("cuLaunchKernel alone (the packed partial, ctypes)", lambda: pl._launch(sv, pl.params, None)),
    ("cuCtxGetCurrent (ctypes)", lambda: getcur(curp)),
    ("xq allocation (the quantize step's allocator)", lambda: alloc_xq(x, False)),
    ("y allocation (the product's allocator)", lambda: alloc_y(x, False)),
    ("torch raw current stream", lambda: torch._C._cuda_getCurrentRawStream(0)),
    ("torch y.zero_() (one torch launch)", lambda: y.zero_()),
    ("torch x.add_(0) (one torch launch)", lambda: x.add_(0)),
    ("torch.empty((1, 4096), f16)", lambda: torch.empty((1, 4096), dtype=torch.float16, device=dev)),
]
rows = []
for name, f in parts:
    us = enqueue_us(f)
    rows.append(dict(part=name, enqueue_us=us))
    print(f"{name:78s} {us:6.2f} us/call", flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), rows=rows), open(sys.argv[1], "w"), indent=1)
