"""Host time per warm call with and without scratch reuse, in one process, the two taking turns
(the host is shared and drifts between rounds, so only a comparison within a round holds): two
copies of one weight, one bound while the device gives no scratch keys (each call allocates its q8_1
copy of x, as before 8a9f866), one as the tree has it. N back-to-back calls, one synchronize;
min and median over the rounds of each side's per-round figure, and of their per-round
difference. torch CUDA tensors, 4096 x 4096, M = 1. argv[1]: output JSON."""
import json, statistics, sys, time
import numpy as np, torch
import qkgen
from qkgen.backends import open_device
from qkgen.formats import reference as ref

N, ROUNDS = 1000, 12
dev = open_device("cuda", 0)
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
for fmt, dt, m in (("q4_0", torch.float16, 1), ("q4_0", torch.bfloat16, 1), ("q5_1", torch.float32, 1),
                   ("q4_0", torch.float32, 4)):
    q = ref.quantize(w, fmt)
    fresh, reuse = cq(q), cq(q)
    x = torch.randn(m, 4096, device="cuda", dtype=dt)
    keyer = type(dev).scratch_keyer
    type(dev).scratch_keyer = lambda self, like: None
    for _ in range(3):
        qkgen.gemv(fresh, x)  # bound without keys: a fresh q8_1 buffer each call
    type(dev).scratch_keyer = keyer
    for _ in range(3):
        qkgen.gemv(reuse, x)
    b = next(iter(reuse._qkgen_calls.values()))
    assert list(b.scratch) and not next(iter(fresh._qkgen_calls.values())).scratch
    assert torch.equal(qkgen.gemv(fresh, x), qkgen.gemv(reuse, x))
    a, c = [], []
    for r in range(ROUNDS):
        for side, out in ((fresh, a), (reuse, c)) if r % 2 == 0 else ((reuse, c), (fresh, a)):
            out.append(per_call_us(lambda: qkgen.gemv(side, x)))
    d = [u - v for u, v in zip(a, c)]
    row = dict(case=f"{fmt} {str(dt).replace('torch.', '')} M={m}", fresh_min=min(a), fresh_med=statistics.median(a),
               reuse_min=min(c), reuse_med=statistics.median(c), saved_med=statistics.median(d), saved_min=min(d))
    rows.append(row)
    print(f"{row['case']:<16} fresh {row['fresh_min']:6.1f} / {row['fresh_med']:6.1f}  reuse {row['reuse_min']:6.1f} / "
          f"{row['reuse_med']:6.1f}  saved per round: median {row['saved_med']:5.1f}, least {row['saved_min']:5.1f} us",
          flush=True)
dense = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
xb = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
t = [per_call_us(lambda: xb @ dense.T) for _ in range(5)]
print(f"torch dense bf16 M=1 (this host): {min(t):.1f} / {statistics.median(t):.1f} us", flush=True)
json.dump(dict(device=torch.cuda.get_device_name(), rows=rows, dense_us=t), open(sys.argv[1], "w"), indent=1)
