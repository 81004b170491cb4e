"""Host time of a device quantize call (issue 13 item 5): cProfile over public qkgen.quantize calls
on a small torch CUDA tensor (the kernel is a few µs), the top entries by own and cumulative time."""
import cProfile, pstats, sys, time
import torch, qkgen

x = torch.randn(4, 4096, device="cuda", dtype=torch.float16)
for fmt, kw in (("q4_0", {}), ("nf4", {"blocksize": 64})):
    for _ in range(5): qkgen.quantize(x, fmt, **kw)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(200): qkgen.quantize(x, fmt, **kw)
    torch.cuda.synchronize()
    print(f"{fmt} {kw}: {(time.perf_counter() - t) / 200 * 1e6:.1f} us/call (4 x 4096 f16)", flush=True)
pr = cProfile.Profile(); pr.enable()
for _ in range(200): qkgen.quantize(x, "q4_0")
pr.disable()
st = pstats.Stats(pr, stream=sys.stdout)
st.sort_stats("tottime").print_stats(25)
st.sort_stats("cumulative").print_stats(40)
