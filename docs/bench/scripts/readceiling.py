"""What a kernel that only reads can reach at a GEMV's weight size, against the 1 GiB copy ceiling.

The GEMV goal is a % of the copy ceiling (copyceiling.py: torch copies of 1 GiB). A weight of
4096 x 14336 codes is 30-60 MB, read once a call in a single wave of work-groups; this probe times a
kernel that does nothing but read (16-byte loads, `unroll` of them in flight a lane, a XOR of what it
read stored once a work-group) over the same bytes, cold (copies rotated past 4x the L2, as the
GEMV sweeps do) and hot, graph-timed like gemv_sweep.py. Two forms:
  "pass": one pass, each lane reads `unroll` vectors and ends (the GEMVs' shape at M = 1: a lane
          takes a few blocks of one row and is done);
  "loop": a grid of `waves` work-groups an SM striding over the bytes.
Also the torch copy at each size (read + write counted, as the ceiling counts them).
argv[1]: output JSON. Prints one line a case: MB, form, wg, unroll, waves, cold/hot us, % of ceiling."""
import json, sys
import numpy as np, torch
from qkgen.backends import open_device
from qkgen.backends.cuda_arrays import TorchPtr
from qkgen.backends.cuda_driver import load_module
from qkgen.backends.cuda_toolchain import nvcc_compile

from copyceiling import ceiling  # noqa: E402 (the script folder is on sys.path)
from gemv_sweep import graph_us  # noqa: E402

SOURCE = r"""
__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
template <int U>
__device__ void pass_body(const uint4* __restrict__ p, unsigned long long n, unsigned* out) {
    const unsigned long long i0 = ((unsigned long long)blockIdx.x * blockDim.x * U) + threadIdx.x;
    unsigned acc = 0u;
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const unsigned long long i = i0 + (unsigned long long)u * blockDim.x;
        v[u] = i < n ? ld_stream(p + i) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;  /* almost never: keeps the loads */
}
template <int U>
__device__ void loop_body(const uint4* __restrict__ p, unsigned long long n, unsigned* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * U;
    unsigned acc = 0u;
    for (unsigned long long i0 = (unsigned long long)blockIdx.x * blockDim.x * U + threadIdx.x; i0 < n; i0 += stride) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const unsigned long long i = i0 + (unsigned long long)u * blockDim.x;
            v[u] = i < n ? ld_stream(p + i) : make_uint4(0u, 0u, 0u, 0u);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;
}
#define FORMS(U) \
extern "C" __global__ void pass_u##U(const uint4* p, unsigned long long n, unsigned* out) { pass_body<U>(p, n, out); } \
extern "C" __global__ void loop_u##U(const uint4* p, unsigned long long n, unsigned* out) { loop_body<U>(p, n, out); }
FORMS(1)
FORMS(2)
FORMS(4)
FORMS(8)
"""


def main(path):
    dev = open_device("cuda", 0)
    props = torch.cuda.get_device_properties(0)
    sms, l2 = props.multi_processor_count, props.L2_cache_size
    cubin = nvcc_compile(SOURCE, dev.arch, ["-O3"], name="readceiling")
    kernels = {}
    with dev._active():
        for form in ("pass", "loop"):
            for u in (1, 2, 4, 8):
                kernels[form, u] = load_module(dev.cu, cubin, f"{form}_u{u}", ("in", "u64", "out"))
    ceil = ceiling()
    print(f"{props.name}: {sms} SMs, L2 {l2 >> 20} MB, copy ceiling {ceil:.0f} GB/s", flush=True)
    out = torch.zeros(1 << 20, dtype=torch.int32, device="cuda")
    rows = []
    # bytes: q4_0 / nf4 / q8_0 codes of 4096 x 14336, bf16 dense 4096 x 14336, 1 GiB
    for mb in (16.5, 29.4, 33.0, 62.4, 117.4, 1024.0):
        nbytes = int(mb * 1e6) // 16 * 16 if mb < 1000 else 1 << 30
        copies = max(1, -(-4 * l2 // nbytes) + 1)
        bufs = [torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda") for _ in range(copies)]
        n16 = nbytes // 16
        dst = torch.empty_like(bufs[0])
        it = iter(range(10**9))
        cp_cold = graph_us(lambda: dst.copy_(bufs[next(it) % copies]), reps=copies * 3)
        rows.append(dict(mb=mb, form="torch copy", cold_us=cp_cold, pct=100 * 2 * nbytes / cp_cold / 1e3 / ceil))
        print(f"{mb:7.1f} MB torch copy  cold {cp_cold:8.2f} us  {rows[-1]['pct']:5.1f}% (r+w)", flush=True)
        cases = [("pass", wg, u, 0) for wg in (128, 256, 512, 1024) for u in (1, 2, 4, 8)]
        cases += [("loop", wg, u, w) for wg in (256, 512, 1024) for u in (1, 2, 4) for w in (1, 2, 4, 8)
                  if wg * w <= 2048]
        for form, wg, u, waves in cases:
            k = kernels[form, u]
            grid = -(-n16 // (wg * u)) if form == "pass" else sms * waves
            if grid > 2**31 - 1:
                continue
            args = [[TorchPtr(b.data_ptr()), n16, TorchPtr(out.data_ptr())] for b in bufs]
            launch = lambda i: dev.launch(k, args[i], (grid * wg,), (wg,))
            it = iter(range(10**9))
            cold = graph_us(lambda: launch(next(it) % copies), reps=copies * 3)
            hot = graph_us(lambda: launch(0), reps=20)
            pct = 100 * nbytes / cold / 1e3 / ceil
            rows.append(dict(mb=mb, form=form, wg=wg, unroll=u, waves=waves, grid=grid, cold_us=cold, hot_us=hot,
                             pct=pct))
            print(f"{mb:7.1f} MB {form:4s} wg {wg:4d} u {u} waves {waves} grid {grid:7d}  cold {cold:8.2f} us  "
                  f"hot {hot:8.2f}  {pct:5.1f}%", flush=True)
        del bufs, dst
        torch.cuda.empty_cache()
    best = {}
    for r in rows:
        if r["form"] != "torch copy" and r["pct"] > best.get(r["mb"], {}).get("pct", 0):
            best[r["mb"]] = r
    for mb, r in best.items():
        print(f"best {mb:7.1f} MB: {r['form']} wg {r['wg']} u {r['unroll']} waves {r['waves']}: {r['cold_us']:.2f} us, "
              f"{r['pct']:.1f}% of copy")
    json.dump(dict(device=props.name, ceiling=ceil, rows=rows), open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
