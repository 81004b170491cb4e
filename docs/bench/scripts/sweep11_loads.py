"""Sweep 11: 2-byte-aligned code runs (q4_0, q5_0, q8_0 blocks) loaded as 4-byte words from the 4-byte
boundary at or below them, shifted down 16 bits where the run is not 4-aligned, the last 2 bytes by a
16-bit load, against today's two 16-bit loads per word. The word form is patched into the dialect here,
then every case runs with both forms in one process (kernel alone, graph-timed, gemv_sweep.run).
argv[1]: output JSON."""
import json, sys
import gemv_sweep as gs
from copyceiling import ceiling
import qkgen.kernels.render as render
from qkgen.kernels.dialects.base import Dialect

today = Dialect.load_u32


def words(self, dst, src, nbytes, align):
    nw = nbytes // 4
    if align != 2 or nw < 2:
        return today(self, dst, src, nbytes, align)
    u, w16 = self.gptr_cast("uint", f"({src} - {dst}_sh / 8u)"), self.gptr_cast("ushort", src)
    lines = [f"const uint {dst}_sh = (uint)((size_t){src} & 2u) * 8u;  /* 0, or 16: 2 bytes past a word */",
             f"uint {dst}_u[{nw}];",
             f"for (uint k = 0; k < {nw}u; ++k) {dst}_u[k] = {u}[k];",
             f"const uint {dst}_t = (uint){w16}[{2 * nw - 1}];  /* the run's last 2 bytes */"]
    for k in range(nw):
        nxt = f"{dst}_u[{k + 1}]" if k + 1 < nw else f"{dst}_t"
        lines.append(f"{dst}[{k}] = {dst}_sh ? ({dst}_u[{k}] >> 16) | ({nxt} << 16) : {dst}_u[{k}];")
    return "\n".join(lines)


CASES = [["q4_0", {}, 4096, 14336, 1, "f16", {}], ["q5_0", {}, 4096, 14336, 1, "f16", {}], ["q8_0", {}, 4096, 14336, 1, "f16", {}],
         ["q4_0", {}, 4096, 14336, 1, "f16", {"op": "gemv_int8dot"}], ["q5_0", {}, 4096, 14336, 1, "f16", {"op": "gemv_int8dot"}],
         ["q8_0", {}, 4096, 14336, 1, "f16", {"op": "gemv_int8dot"}], ["q4_0", {}, 4096, 14336, 8, "f16", {"op": "gemv_int8dot"}],
         ["q8_0", {}, 4096, 14336, 8, "f16", {"op": "gemv_int8dot"}],
         ["q4_0", {}, 4096, 14336, 8, "f16", {"op": "gemv_mma"}], ["q5_0", {}, 4096, 14336, 8, "f16", {"op": "gemv_mma"}],
         ["q8_0", {}, 4096, 14336, 8, "f16", {"op": "gemv_mma"}], ["q4_0", {}, 4096, 14336, 1, "f16", {"op": "gemv_mma"}],
         ["q4_0", {}, 8192, 8192, 0, "f16", {"op": "dequantize"}], ["q8_0", {}, 8192, 8192, 0, "f16", {"op": "dequantize"}]]

cg = ceiling()
print(f"copy ceiling {cg:.0f} GB/s", flush=True)
rows = []
for form in ("u16 pairs", "words"):
    Dialect.load_u32 = today if form == "u16 pairs" else words
    render._render.cache_clear()
    for fmt, kw, n, k, m, dtype, ov in CASES:
        r = gs.run(fmt, kw, n, k, m, dtype, ov)
        r.update(form=form, op=ov.get("op", "gemv"), pct=100 * r["bytes"] / (r["cold_us"] * 1e-6) / 1e9 / cg)
        rows.append(r)
        print(f"{form:<9} {r['op']:<12} {fmt:<5} m{m} cold {r['cold_us']:6.1f} us ({r['pct']:3.0f}%) hot {r['hot_us']:6.1f} rel {r['rel']:.1e}", flush=True)
json.dump(dict(ceiling=cg, rows=rows), open(sys.argv[1], "w"))
