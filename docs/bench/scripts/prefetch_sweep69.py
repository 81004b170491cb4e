"""Sweep 69's cases (run 172): dequantize's prefetch knob (every turn's codes asked of L2 before the
tables' barrier) off and on across rows, shapes and output types; and the same idea for the GEMVs as a
source patch: the first turn's codes of each lane's rows asked of L2 before the pair table (pairs, M =
1) or the code tables (gemv_mma, M = 8) are set up. argv[1]: the JSON to write."""
import json, re, sys
from qkgen.kernels.render import render

PF = 'asm volatile("prefetch.global.L2 [%0];" :: "l"({ptr}));'
# the barrier after the nested table's setup: the first one (the reductions have their own)
BARRIER = "    for (uint t = threadIdx.x; t < 256u; t += blockDim.x) lut2[t] = TABLE2[t];\n    __syncthreads();\n"


def first_turn_pairs(src, rpw):
    m = re.search(r"const uint tlane = lid % (\d+)u;", src)
    team = m.group(1) if m else "32"  # one lane group a team: tlane is the lane
    row0 = re.search(r"const uint row0 = (.*);\n", src).group(1)
    block = ("    {  /* what-if: the first turn's codes of this lane's rows, asked of L2 before the table */\n"
             f"        const uint lid = threadIdx.x;\n        const uint tlane = lid % {team}u;\n"
             f"        const uint row0 = {row0};\n"
             f"        for (uint r = 0; r < {rpw}u; ++r)\n"
             "            if (row0 + r < N && tlane < K / 32u) "
             + PF.format(ptr="codes + ((size_t)(row0 + r) * K + tlane * 32u) / 2u") + "\n    }\n")
    return [[BARRIER, BARRIER.replace("    __syncthreads", block + "    __syncthreads")]]


def first_turn_mma():
    block = ("    {  /* what-if: the first step's codes of this lane's rows, asked of L2 before the tables */\n"
             "        const uint g = threadIdx.x % 32u / 4u;\n"
             "        const uint ch = threadIdx.x / 32u * 4u + threadIdx.x % 4u;\n"
             "        for (uint h = 0; h < 2u; ++h) {\n"
             "            const uint row = blockIdx.x * 16u + h * 8u + g;\n"
             "            if (row < N && ch < K / 32u) "
             + PF.format(ptr="codes + ((size_t)row * K + ch * 32u) / 2u") + "\n        }\n    }\n")
    return [[BARRIER, BARRIER.replace("    __syncthreads", block + "    __syncthreads")]]


if __name__ == "__main__":
    cases = []
    add = lambda fmt, kw, n, k, m, dt, **ov: cases.append([fmt, kw, n, k, m, dt, ov])
    nst = {"nested": True, "blocksize": 64}
    deq = lambda fmt, kw, n, k, dt, on: add(fmt, kw, n, k, 1, dt, op="dequantize", prefetch=on)
    for n, k in ((8192, 8192), (4096, 14336), (14336, 4096), (4096, 4096)):
        deq("nf4", nst, n, k, "bf16", False)
        deq("nf4", nst, n, k, "bf16", True)
    for dt in ("f16", "f32"):
        deq("nf4", nst, 8192, 8192, dt, False)
        deq("nf4", nst, 8192, 8192, dt, True)
    for fmt, kw in (("fp4", nst), ("nf4", {"blocksize": 64}), ("fp4", {"blocksize": 64}),
                    ("blockwise8", {"blocksize": 256})):
        for dt in ("bf16", "f32"):
            deq(fmt, kw, 8192, 8192, dt, False)
            deq(fmt, kw, 8192, 8192, dt, True)
    for n, k, dt, sl in ((8192, 8192, "bf16", 2), (4096, 14336, "f16", 4), (14336, 4096, "bf16", 1)):
        ov = dict(rpw=4, wg=256, slices=sl, pairs=True)
        src = render("gemv", "nf4", "cuda-sm90", dtype=dt, mmax=1, **nst, **ov).source
        add("nf4", nst, n, k, 1, dt, **ov)
        add("nf4", nst, n, k, 1, dt, **ov, patch=first_turn_pairs(src, 4))
    for n, k, dt in ((4096, 14336, "f16"), (8192, 8192, "bf16")):
        add("nf4", nst, n, k, 8, dt, op="gemv_mma")
        add("nf4", nst, n, k, 8, dt, op="gemv_mma", patch=first_turn_mma())
    json.dump(cases, open(sys.argv[1], "w"))
    print(len(cases))
