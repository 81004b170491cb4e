"""What-if probe for the mma path's table decode (run 77): writes a gemv_sweep case list whose
"patch" entries replace nf4's per-weight decode in the rendered gemv_mma source (bf16 x) with
  free:  a decode of about one instruction a weight, values wrong: the floor the loads and products set;
  prmt:  the 16-entry table rounded to bf16, looked up four codes at a time by byte permutes (no
         local memory), each pair times the block's scale rounded to bf16 (one bf16x2 multiply).
argv[1]: output JSON."""
import json, sys
import numpy as np
from qkgen import formats as F
from qkgen.formats import reference as ref

OLD = """                float v[32];
                for (uint i = 0; i < 32u; ++i) {
                    uint q = (w[(i / 2u) / 4u] >> (((i / 2u) % 4u) * 8u + 4u - (i % 2u) * 4u)) & 15u;
                    v[i] = __fmul_rn(lut[q], s);
                }
                /* each value rounded to bf16 once: the a fragments */
                for (uint p = 0; p < 16u; ++p) {
                    const float lo = v[2u * p];
                    const float hi = v[2u * p + 1u];
                    wp[h][p] = live ? qk_pack_bf16x2(lo, hi) : 0u;
                }
"""
FREE = """                for (uint p = 0; p < 16u; ++p) wp[h][p] = live ? ((w[p / 4u] >> ((p % 4u) * 8u)) & 0x000F000Fu) | 0x3F803F80u : 0u;
"""
bits = ref.round_to(np.asarray(F.get("nf4").table, np.float32), "bf16").astype(np.uint32)  # bf16 bits
lo = [sum((int(bits[4 * j + b]) & 0xFF) << (8 * b) for b in range(4)) for j in range(4)]
hi = [sum((int(bits[4 * j + b]) >> 8) << (8 * b) for b in range(4)) for j in range(4)]
L = ", ".join("0x%08xu" % v for v in lo)
H = ", ".join("0x%08xu" % v for v in hi)
PRMT = """                const uint TL[4] = {%s};
                const uint TH[4] = {%s};
                uint sb = (uint)qk_f32_to_bf16(s) * 0x10001u;
                for (uint k = 0; k < 4u; ++k) {
                    const uint q4 = w[k];
                    const uint sel = ((q4 & 0x88888888u) >> 1) | 0x32103210u;
                    uint lo[2], hi[2];
                    for (uint hf = 0; hf < 2u; ++hf) {
                        const uint qs = q4 >> (16u * hf);
                        lo[hf] = __byte_perm(__byte_perm(TL[0], TL[1], qs), __byte_perm(TL[2], TL[3], qs), sel >> (16u * hf));
                        hi[hf] = __byte_perm(__byte_perm(TH[0], TH[1], qs), __byte_perm(TH[2], TH[3], qs), sel >> (16u * hf));
                    }
                    for (uint j = 0; j < 4u; ++j) {
                        const uint hf = j / 2u, n0 = (j %% 2u) * 2u;
                        const uint pr = __byte_perm(lo[hf], hi[hf], (n0 + 1u) | ((n0 + 5u) << 4) | (n0 << 8) | ((n0 + 4u) << 12));
                        uint r;
                        asm("fma.rn.bf16x2 %%0, %%1, %%2, %%3;" : "=r"(r) : "r"(pr), "r"(sb), "r"(0x80008000u));
                        wp[h][4u * k + j] = live ? r : 0u;
                    }
                }
""" % (L, H)
nf = {"nested": True, "blocksize": 64}
cases = []
for n, k in [(8192, 8192), (4096, 14336)]:
    cases.append(["nf4", nf, n, k, 1, "bf16", {}])
    for wg in (512, 256):
        cases.append(["nf4", nf, n, k, 1, "bf16", {"op": "gemv_mma", "wg": wg}])
        cases.append(["nf4", nf, n, k, 1, "bf16", {"op": "gemv_mma", "wg": wg, "patch": [[OLD, FREE]]}])
        cases.append(["nf4", nf, n, k, 1, "bf16", {"op": "gemv_mma", "wg": wg, "patch": [[OLD, PRMT]]}])
    cases.append(["nf4", nf, n, k, 8, "bf16", {"op": "gemv_mma"}])
    cases.append(["nf4", nf, n, k, 8, "bf16", {"op": "gemv_mma", "patch": [[OLD, PRMT]]}])
json.dump(cases, open(sys.argv[1], "w"))
