"""Device quantizer speed (issue 13 item 5): qkgen.quantize on torch CUDA tensors, public calls.
argv[1]: output JSON. Per format: wall µs per call (CUDA-synchronized, median of 7 runs of `calls`
back-to-back calls after 2 warm ones), GB/s of x read + codes and statistics written, % of the
copy ceiling measured in the same run, and whether the bytes equal the host reference codec's on a
slice (the first 64 rows)."""
import json, sys, time
import numpy as np, torch, qkgen

CASES = [("nf4", dict(blocksize=64, nested=True)), ("fp4", dict(blocksize=64, nested=True)), ("blockwise8", {}),
         ("q4_0", {}), ("q8_0", {}), ("q5_1", {}), ("int4", dict(scale_mode="row")), ("q4_k", {}), ("q6_k", {}),
         ("mxfp4", {}), ("nvfp4", {})]
N, K = 4096, 14336


from copyceiling import ceiling  # noqa: E402 (the script folder is on sys.path)


def nbytes(v):
    return v.numel() * v.element_size() if torch.is_tensor(v) else np.asarray(v).nbytes


cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s", flush=True)
rows = []
torch.manual_seed(0)
ONLY = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None  # argv[2]: formats to run (default: all)
for dt in (torch.float16, torch.float32):
    x = torch.randn(N, K, device="cuda").to(dt)
    for fmt, kw in CASES:
        if ONLY and fmt not in ONLY:
            continue
        try:
            for _ in range(2): qt = qkgen.quantize(x, fmt, **kw)
            torch.cuda.synchronize()
            ts = []
            calls = 5
            for _ in range(7):
                t0 = time.perf_counter()
                for _ in range(calls): qt = qkgen.quantize(x, fmt, **kw)
                torch.cuda.synchronize()
                ts.append((time.perf_counter() - t0) / calls * 1e6)
            us = float(np.median(ts))
            moved = x.numel() * x.element_size() + sum(nbytes(v) for v in qt.arrays().values())
            host = qkgen.quantize(x[:64].float().cpu().numpy(), fmt, **kw)
            dev = qkgen.quantize(x[:64].contiguous(), fmt, **kw).to_host()
            equal = all(np.array_equal(np.asarray(host.arrays()[a]), np.asarray(dev.arrays()[a])) for a in host.arrays())
            r = dict(fmt=fmt, kw=kw, dtype=str(dt).split(".")[-1], us=us, bytes=moved,
                     pct=100 * moved / (us * 1e-6) / 1e9 / cg, equal=equal)
        except Exception as e:
            print(f"{fmt} {kw}: ERROR {type(e).__name__}: {str(e)[:300]}", flush=True); continue
        rows.append(r)
        print(f"{fmt:<10} {json.dumps(kw):<36} {r['dtype']:<8} {us:9.1f} us/call  {r['pct']:5.1f}% of copy  "
              f"bytes equal to the host codec (64 rows): {equal}", flush=True)
json.dump(dict(ceiling=cg, shape=[N, K], rows=rows), open(sys.argv[1], "w"))
