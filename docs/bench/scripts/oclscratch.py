"""Host time per warm two-launch call (q4_0, int8dot path, M = 1, 64 x 256: the kernels are tiny)
with device arrays of an OpenCL or SYCL device, with and without scratch reuse, in one process,
taking turns (10 rounds of N calls). argv[1]: "opencl" (pyopencl arrays, default) or "sycl" (USM);
argv[2] (optional): the device, by name substring."""
import statistics, sys, time
import numpy as np
import qkgen
from qkgen.backends import open_device
from qkgen.formats import reference as ref

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "opencl"
dev = open_device(BACKEND, sys.argv[2] if len(sys.argv) > 2 else None)
if BACKEND == "opencl":
    import pyopencl.array as cla

    to_dev, get = (lambda a: cla.to_device(dev.queue, np.ascontiguousarray(a))), (lambda y: y.get())
else:
    to_dev, get = (lambda a: dev.to_device(np.ascontiguousarray(a))), (lambda y: y.to_host())
n, k, N = 64, 256, 500
q = ref.quantize(np.random.default_rng(0).standard_normal((n, k)).astype(np.float32), "q4_0")
fresh, reuse = (q.with_arrays(**{kk: to_dev(v) for kk, v in q.arrays().items()}) for _ in range(2))
x = to_dev(np.random.default_rng(1).standard_normal((1, k)).astype(np.float32))
call = lambda qt: qkgen.gemv(qt, x, path="int8dot", backend=BACKEND)  # noqa: E731
keyer = type(dev).scratch_keyer
type(dev).scratch_keyer = lambda self, like: None
for _ in range(3):
    call(fresh)  # bound without keys: a fresh q8_1 buffer each call
type(dev).scratch_keyer = keyer
for _ in range(3):
    call(reuse)
assert list(next(iter(reuse._qkgen_calls.values())).scratch) and not next(iter(fresh._qkgen_calls.values())).scratch
assert np.array_equal(get(call(fresh)), get(call(reuse)))


def per_call_us(qt):
    dev.synchronize()
    t0 = time.perf_counter()
    for _ in range(N):
        call(qt)
    dev.synchronize()
    return (time.perf_counter() - t0) * 1e6 / N


a, c = [], []
for r in range(10):
    for side, out in ((fresh, a), (reuse, c)) if r % 2 == 0 else ((reuse, c), (fresh, a)):
        out.append(per_call_us(side))
print(f"{BACKEND} {getattr(dev.info, 'name', '')}: q4_0 {n}x{k} M=1 int8dot, device arrays: fresh "
      f"{min(a):.1f} / {statistics.median(a):.1f}, reuse {min(c):.1f} / {statistics.median(c):.1f} us a call (min / "
      f"median); saved per round, median: {statistics.median([u - v for u, v in zip(a, c)]):.1f} us")
