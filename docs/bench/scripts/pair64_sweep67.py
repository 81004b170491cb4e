"""Sweep 67's cases (run 170): a what-if, as source patches. The two values of a 4-bit table row's code
byte come from a table of 256 f32 pairs in one 64-bit local read, where the kernels now look up each
nibble alone; each product or value stays the f32 it was (y and the dequantized values bit for bit
the same). Copies: the pair table repeated so half-warp lane l reads copy l % copies (16: each
half-warp's reads in banks of their own; 1: one 2 KB table). Cases: gemv_mma at M = 8, the float
GEMV at M = 1 (its defaults and the pairs path's knobs), and dequantize (with the nested table read
from global memory directly, no local copy). argv[1]: the JSON to write."""
import json, sys

NIBBLE_MMA = """                for (uint i = 0; i < 32u; ++i) {
                    uint q = (w[(i / 2u) / 4u] >> (((i / 2u) % 4u) * 8u + 4u - (i % 2u) * 4u)) & 15u;
                    v[i] = __fmul_rn(lut[q], s);
                }"""
NIBBLE_FLOAT = """                    for (uint j = 0; j < 8u; ++j) {
                        const uint i = g * 8u + j;  /* the element in the chunk */
                        uint q = (wq[r][(i / 2u) / 4u] >> (((i / 2u) % 4u) * 8u + 4u - (i % 2u) * 4u)) & 15u;
                        v[r][j] = lut[q];
                    }"""
NIBBLE_DEQ = """            for (uint i = 0; i < 8u; ++i) {
                const uint q = (w[(i / 2u) / 4u] >> (((i / 2u) % 4u) * 8u + 4u - (i % 2u) * 4u)) & 15u;
                v[i] = __fmul_rn(lut[q], s);
            }"""
FILL16 = "    for (uint t = threadIdx.x; t < 16u; t += blockDim.x) lut[t] = TABLE[t];\n"
FILL256 = "    for (uint t = threadIdx.x; t < 256u; t += blockDim.x) lut2[t] = TABLE2[t];\n"


def slot(copies: int) -> str:
    """The pair table index of byte b for this lane."""
    return "" if copies == 1 else f" * {copies}u + threadIdx.x % {copies}u"


def fill(copies: int) -> list[str]:
    """The patch that adds the pair table beside lut (kept: other code may read it)."""
    n = 256 * copies
    return [FILL16, FILL16 + f"    __shared__ float2 pt[{n}];\n"
            f"    for (uint t = threadIdx.x; t < {n}u; t += blockDim.x) {{\n"
            f"        const uint b = t / {copies}u;\n"
            "        pt[t] = make_float2(TABLE[b >> 4], TABLE[b & 15u]);\n    }\n"]


def mma_patch(copies):
    body = f"""                for (uint i = 0; i < 16u; ++i) {{
                    const float2 pv = pt[(w[i / 4u] >> ((i % 4u) * 8u) & 255u){slot(copies)}];
                    v[2u * i] = __fmul_rn(pv.x, s);
                    v[2u * i + 1u] = __fmul_rn(pv.y, s);
                }}"""
    return [fill(copies), [NIBBLE_MMA, body]]


def float_patch(copies):
    body = f"""                    for (uint j = 0; j < 4u; ++j) {{
                        const float2 pv = pt[(wq[r][g] >> (j * 8u) & 255u){slot(copies)}];
                        v[r][2u * j] = pv.x;
                        v[r][2u * j + 1u] = pv.y;
                    }}"""
    return [fill(copies), [NIBBLE_FLOAT, body]]


CP = "const uchar* cp = codes + e0 / 2u;\n"


def l2_ahead(turns: int) -> list[list[str]]:
    """Each lane asks L2 for its codes `turns` turns ahead (1024 bytes a turn in all three kernels:
    64 chunks of 16 bytes a team or a warp's quad lanes' steps, 256 chunks of 4 bytes a work-group)."""
    return [[CP, CP + f'asm volatile("prefetch.global.L2 [%0];" :: "l"(cp + {1024 * turns}u));\n']]


TABLE2_DIRECT = [[FILL256, ""], ["lut2[absmax_q", "TABLE2[absmax_q"]]


def deq_patch(copies):
    body = f"""            for (uint i = 0; i < 4u; ++i) {{
                const float2 pv = pt[(w[0] >> (i * 8u) & 255u){slot(copies)}];
                v[2u * i] = __fmul_rn(pv.x, s);
                v[2u * i + 1u] = __fmul_rn(pv.y, s);
            }}"""
    return [fill(copies), [NIBBLE_DEQ, body]]


if __name__ == "__main__":
    cases = []
    nst, bs = {"nested": True, "blocksize": 64}, {"blocksize": 64}
    add = lambda fmt, kw, n, k, m, dt, **ov: cases.append([fmt, kw, n, k, m, dt, ov])
    # gemv_mma at M = 8 (its defaults: one tile, 16 warps)
    for fmt, kw, n, k, dt in (("nf4", nst, 4096, 14336, "f16"), ("nf4", nst, 8192, 8192, "bf16"),
                              ("fp4", nst, 4096, 14336, "f16"), ("nf4", bs, 4096, 14336, "f16")):
        add(fmt, kw, n, k, 8, dt, op="gemv_mma")
        add(fmt, kw, n, k, 8, dt, op="gemv_mma", patch=mma_patch(16))
    add("nf4", nst, 4096, 14336, 8, "f16", op="gemv_mma", patch=mma_patch(1))
    for ahead in (1, 2, 4):
        add("nf4", nst, 4096, 14336, 8, "f16", op="gemv_mma", patch=l2_ahead(ahead))
    add("nf4", nst, 4096, 14336, 8, "f16", op="gemv_mma", patch=mma_patch(16) + l2_ahead(2))
    add("nf4", nst, 8192, 8192, 8, "bf16", op="gemv_mma", patch=mma_patch(16) + l2_ahead(2))
    add("nf4", nst, 4096, 14336, 4, "f16", op="gemv_mma")
    add("nf4", nst, 4096, 14336, 4, "f16", op="gemv_mma", patch=mma_patch(16))
    # the float GEMV at M = 1: its defaults, and the pairs path's knobs (rpw 4, wg 256, slices by N)
    for n, k, dt, sl in ((8192, 8192, "bf16", 2), (4096, 14336, "f16", 4), (14336, 4096, "bf16", 1)):
        add("nf4", nst, n, k, 1, dt)
        add("nf4", nst, n, k, 1, dt, patch=float_patch(16))
        add("nf4", nst, n, k, 1, dt, rpw=4, wg=256, slices=sl, patch=float_patch(16))
        add("nf4", nst, n, k, 1, dt, rpw=4, wg=256, slices=sl, pairs=True)
        for ahead in (1, 2, 4):
            add("nf4", nst, n, k, 1, dt, rpw=4, wg=256, slices=sl, pairs=True, patch=l2_ahead(ahead))
        add("nf4", nst, n, k, 1, dt, patch=l2_ahead(2))
    # dequantize -> bf16, 8192^2
    for fmt in ("nf4", "fp4"):
        add(fmt, nst, 8192, 8192, 1, "bf16", op="dequantize")
        add(fmt, nst, 8192, 8192, 1, "bf16", op="dequantize", patch=TABLE2_DIRECT)
        add(fmt, nst, 8192, 8192, 1, "bf16", op="dequantize", patch=TABLE2_DIRECT + deq_patch(1))
    add("nf4", nst, 8192, 8192, 1, "bf16", op="dequantize", patch=TABLE2_DIRECT + deq_patch(16))
    add("nf4", nst, 8192, 8192, 1, "bf16", op="dequantize", cpi=8, patch=TABLE2_DIRECT)
    add("nf4", nst, 8192, 8192, 1, "bf16", op="dequantize", cpi=8, patch=TABLE2_DIRECT + deq_patch(1))
    for ahead in (1, 2, 4):
        add("nf4", nst, 8192, 8192, 1, "bf16", op="dequantize", patch=TABLE2_DIRECT + l2_ahead(ahead))
    add("nf4", bs, 8192, 8192, 1, "bf16", op="dequantize")
    add("nf4", bs, 8192, 8192, 1, "bf16", op="dequantize", patch=deq_patch(1))
    json.dump(cases, open(sys.argv[1], "w"))
    print(len(cases))
