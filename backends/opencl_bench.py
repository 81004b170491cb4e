"""The copy ceiling of an OpenCL device: the best of enqueue_copy and a uint4 copy kernel, each the
median of profiled runs. Runtimes differ in which is faster (pocl's enqueue_copy is a memcpy on
one thread), so both are measured and the best is the ceiling."""

from __future__ import annotations

import warnings

import numpy as np

from .base import ceiling_bytes, copy_gbps, median_of

_COPY_KERNEL = """
__kernel void qkgen_copy_ceiling(__global const uint4* restrict src, __global uint4* restrict dst, uint n) {
    uint i = get_global_id(0);
    if (i < n) dst[i] = src[i];
}
"""


def _event_ms(ev) -> float:
    ev.wait()
    return (ev.profile.end - ev.profile.start) * 1e-6


def opencl_copy_ceiling(dev, cl, nbytes: int, iters: int, warmup: int) -> dict:
    nbytes = ceiling_bytes(nbytes, dev.dev.max_mem_alloc_size, dev.dev.global_mem_size)
    mf, q = cl.mem_flags, dev.queue
    src = cl.Buffer(dev.ctx, mf.READ_WRITE, nbytes)
    dst = cl.Buffer(dev.ctx, mf.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(q, src, np.uint8(1), 0, nbytes)
    cl.enqueue_fill_buffer(q, dst, np.uint8(0), 0, nbytes)
    q.finish()
    gbps = {}
    ms = median_of(lambda: _event_ms(cl.enqueue_copy(q, dst, src, byte_count=nbytes)), iters, warmup)
    gbps["enqueue_copy"] = copy_gbps(nbytes, ms)
    failed = {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            kernel = cl.Program(dev.ctx, _COPY_KERNEL).build(cache_dir=False).qkgen_copy_ceiling
    except cl.Error as e:  # a device that cannot build OpenCL C still has enqueue_copy
        failed["uint4 copy kernel"] = str(e).strip().splitlines()[0]
    else:
        kernel.set_scalar_arg_dtypes([None, None, np.uint32])
        n16, wg = nbytes // 16, 256
        gsize = -(-n16 // wg) * wg
        ms = median_of(lambda: _event_ms(kernel(q, (gsize,), (wg,), src, dst, np.uint32(n16))), iters, warmup)
        gbps["uint4 copy kernel"] = copy_gbps(nbytes, ms)
    best = max(gbps, key=gbps.get)
    method = f"OpenCL {best} (profiling events)"
    out = {"gbps": gbps[best], "method": method, "buffer_bytes": nbytes, "all": gbps}
    return {**out, "failed": failed} if failed else out
