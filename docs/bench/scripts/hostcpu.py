"""Host time of warm qkgen.gemv calls on device arrays (64 x 256 weight, M = 1): the median time
for a call to return, the device idle before each call. argv: backend (opencl | sycl), device
substring, format, path ("-": the default). Prints one line of JSON."""
import json, sys, time
import numpy as np, qkgen
from qkgen.backends import open_device
from qkgen.formats import reference as ref
backend, where, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
path = None if sys.argv[4] == "-" else sys.argv[4]
dev = open_device(backend, where)
if backend == "opencl":
    import pyopencl.array as cla
    to_dev = lambda a: cla.to_device(dev.queue, np.ascontiguousarray(a))
else:
    to_dev = lambda a: dev.to_device(np.ascontiguousarray(a))
q = ref.quantize(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32), fmt)
qt = q.with_arrays(**{k: to_dev(v) for k, v in q.arrays().items()})
x = to_dev(np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32))
call = lambda: qkgen.gemv(qt, x, path=path, backend=backend, device=where)
for _ in range(50):
    call()
ts = []
for _ in range(400):
    dev.synchronize(); t = time.perf_counter(); call(); ts.append(time.perf_counter() - t)
print(json.dumps({"us": round(float(np.median(ts) * 1e6), 1)}))
