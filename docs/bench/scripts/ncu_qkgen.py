"""The qkgen side of sametimer.py: 60 public qkgen.gemv calls, the same weight and x each time.
argv: format, M (rows of x), N, K, path ("" for the default), then optional: x's dtype (f32, f16,
bf16; default f32) and "nested" (nested statistics, nf4/fp4)."""
import sys
import torch, qkgen

fmt, m, n, k = sys.argv[1], *map(int, sys.argv[2:5])
path = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[sys.argv[6] if len(sys.argv) > 6 else "f32"]
kw = {"nested": True} if len(sys.argv) > 7 and sys.argv[7] == "nested" else {}
torch.manual_seed(0)
qt = qkgen.quantize(torch.randn(n, k, device="cuda"), fmt, **kw)
x = torch.randn(m, k, device="cuda").to(dtype)
for _ in range(60):
    qkgen.gemv(qt, x, path=path)
torch.cuda.synchronize()
