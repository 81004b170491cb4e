"""The qkgen side of sametimer.py: 60 public qkgen.gemv calls, the same weight and f32 x each time.
argv: format, M (rows of x), N, K, path ("" for the default)."""
import sys
import torch, qkgen

fmt, m, n, k = sys.argv[1], *map(int, sys.argv[2:5])
path = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
torch.manual_seed(0)
qt = qkgen.quantize(torch.randn(n, k, device="cuda"), fmt)
x = torch.randn(m, k, device="cuda")
for _ in range(60):
    qkgen.gemv(qt, x, path=path)
torch.cuda.synchronize()
