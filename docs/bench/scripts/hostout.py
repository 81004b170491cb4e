"""Host time per warm qkgen.gemv call with out= (y written into the caller's tensor) against the
call that allocates y, in one process, the two taking turns (12 rounds of N back-to-back calls, one
synchronize each): min and median of each side, median of the per-round difference. torch CUDA
tensors, 4096 x 4096; torch's dense product on the same host for scale. argv[1]: output JSON."""
import json, statistics, sys, time
import numpy as np, torch
import qkgen
from qkgen.formats import reference as ref

N, ROUNDS = 1000, 12
w = np.random.default_rng(0).standard_normal((4096, 4096)).astype(np.float32)
cq = lambda qt: qt.with_arrays(**{k: torch.from_numpy(np.ascontiguousarray(v)).cuda() for k, v in qt.arrays().items()})


def per_call_us(f):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / N


rows = []
for fmt, kw, dt, m, what in (("nf4", {"nested": True}, torch.bfloat16, 1, "one launch"),
                             ("q4_0", {}, torch.float16, 1, "two launches"), ("q4_0", {}, torch.float32, 4, "two launches")):
    qt = cq(ref.quantize(w, fmt, **kw))
    x = torch.randn(m, 4096, device="cuda", dtype=dt)
    out = torch.empty(m, 4096, device="cuda", dtype=dt)
    assert torch.equal(qkgen.gemv(qt, x, out=out), qkgen.gemv(qt, x))
    a, c = [], []
    for r in range(ROUNDS):
        sides = ((lambda: qkgen.gemv(qt, x), a), (lambda: qkgen.gemv(qt, x, out=out), c))
        for f, got in sides if r % 2 == 0 else sides[::-1]:
            got.append(per_call_us(f))
    d = [u - v for u, v in zip(a, c)]
    row = dict(case=f"{fmt}{' nested' if kw else ''} {str(dt).replace('torch.', '')} M={m} ({what})", new_min=min(a),
               new_med=statistics.median(a), out_min=min(c), out_med=statistics.median(c), saved_med=statistics.median(d))
    rows.append(row)
    print(f"{row['case']:<36} y allocated {row['new_min']:6.1f} / {row['new_med']:6.1f}   out= {row['out_min']:6.1f} / "
          f"{row['out_med']:6.1f} us a call; saved per round, median {row['saved_med']:4.1f}", flush=True)
dense = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
xb = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
yb = torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16)
t = [per_call_us(lambda: xb @ dense.T) for _ in range(5)]
t2 = [per_call_us(lambda: torch.matmul(xb, dense.T, out=yb)) for _ in range(5)]
print(f"torch dense bf16 M=1 on this host: {min(t):.1f} / {statistics.median(t):.1f} us; with out=: "
      f"{min(t2):.1f} / {statistics.median(t2):.1f}", flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), rows=rows, dense_us=t, dense_out_us=t2), open(sys.argv[1], "w"),
          indent=1)
