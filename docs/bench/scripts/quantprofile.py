"""Where a device quantize call spends its time (issue 13 item 5): torch.profiler over public
qkgen.quantize calls on a torch CUDA tensor x [4096, 14336]; per format the kernels' device time
(CUPTI), the torch ops qkgen runs (checks, copies), and the wall time per call.
argv[1]: output text file (the tables); argv[2] (optional): a comma-separated subset of the cases'
formats (nf4 matches both nf4 cases), argv[3] (optional): the x dtypes (default f16,f32)."""
import sys, time
import numpy as np, torch, qkgen
from torch.profiler import profile, ProfilerActivity

CASES = [("q4_0", {}), ("q8_0", {}), ("q5_1", {}), ("mxfp4", {}), ("nvfp4", {}), ("int4", dict(scale_mode="row")),
         ("blockwise8", {}), ("nf4", dict(blocksize=64, nested=True)), ("nf4", dict(blocksize=64)),
         ("q4_k", {}), ("q6_k", {}), ("fp4", dict(blocksize=64))]
N, K = 4096, 14336
if len(sys.argv) > 2:
    CASES = [c for c in CASES if c[0] in sys.argv[2].split(",")]
DTYPES = [getattr(torch, {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}[d])
          for d in (sys.argv[3] if len(sys.argv) > 3 else "f16,f32").split(",")]
out = open(sys.argv[1], "w")
torch.manual_seed(0)
for dt in DTYPES:
    x = torch.randn(N, K, device="cuda").to(dt)
    for fmt, kw in CASES:
        for _ in range(2): qkgen.quantize(x, fmt, **kw)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(3): qkgen.quantize(x, fmt, **kw)
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / 3 * 1e6
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(3): qkgen.quantize(x, fmt, **kw)
            torch.cuda.synchronize()
        head = f"== {fmt} {kw} {str(dt).split('.')[-1]}: wall {wall:.1f} us/call"
        print(head, flush=True)
        ev = p.key_averages()
        dev = sorted((e for e in ev if e.device_time_total > 0), key=lambda e: -e.device_time_total)
        lines = [head] + [f"   dev {e.device_time_total / 3:9.1f} us/call  x{e.count // 3:<3} {e.key[:90]}" for e in dev[:8]]
        cpu = sorted((e for e in ev if e.cpu_time_total > 0 and not e.key.startswith("cuda")), key=lambda e: -e.self_cpu_time_total)
        lines += [f"   cpu {e.self_cpu_time_total / 3:9.1f} us/call (self)  {e.key[:90]}" for e in cpu[:6]]
        out.write("\n".join(lines) + "\n"); out.flush()
        print("\n".join(lines[1:]), flush=True)
