"""Sweep 60's cases (run 162): the float GEMV at M = 1 with a byte-pair table, as a what-if patch of the
rendered CUDA source (before the template had pairs). argv[1]: the JSON to write (gemv_sweep.py's
input). Needs qkgen importable (the project's .venv)."""
import json, sys, re
from qkgen.kernels.render import render

def kernel_src(dtype, rpw, slices, wg=128, nested=True, fmt="nf4"):
    kw = dict(dtype=dtype, blocksize=64, nested=nested, mmax=1, rpw=rpw, slices=slices)
    if wg != 128: kw["wg"] = wg
    return render("gemv", fmt, "cuda-sm90", **kw).source

def patch_for(src, dtype, rpw, reps=32, acc_words=1):
    p = []
    old_tab = "    __shared__ float lut[16];\n"
    assert old_tab in src
    t2 = "__nv_bfloat162" if dtype == "bf16" else "__half2"
    lanebits = {32: "lane", 16: "(lane & 15u)", 8: "(lane & 7u)", 1: "0u"}[reps]
    sh = reps.bit_length() - 1
    p.append([old_tab, f"    __shared__ uint lutp[{256 * reps}];  /* byte b's value pair, lane copy c at b * {reps} + c */\n"])
    cvt = "__floats2bfloat162_rn" if dtype == "bf16" else "__floats2half2_rn"
    old_fill = "    for (uint t = threadIdx.x; t < 16u; t += blockDim.x) lut[t] = TABLE[t];\n"
    assert old_fill in src
    p.append([old_fill, f"    for (uint t = threadIdx.x; t < {256 * reps}u; t += blockDim.x) {{ const {t2} pv = {cvt}(TABLE[(t >> {sh + 4}) & 15u], TABLE[(t >> {sh}) & 15u]); lutp[t] = *(const uint*)&pv; }}\n"])
    # the inner loop
    m = re.search(r"            for \(uint g = 0; g < 4u; \+\+g\) \{\n.*?\n            \}\n            for \(uint r = 0; r < %du; \+\+r\) \{\n                acc" % rpw, src, re.S)
    assert m, "loop"
    old = m.group(0)
    tail = "            for (uint r = 0; r < %du; ++r) {\n                acc" % rpw
    tof = "__bfloat1622float2" if dtype == "bf16" else "__half22float2"
    new = f"""            const uint lane4 = {lanebits} * 4u;
            for (uint g = 0; g < 4u; ++g) {{
                const uchar* xp = x + ((size_t)k0 + g * 8u) * 2u;
                const uint4 xv = ((const uint4*)xp)[0];
                const uint xw[4] = {{xv.x, xv.y, xv.z, xv.w}};
                for (uint r = 0; r < {rpw}u; ++r) {{
                    const uint wv = wq[r][g];
                    {t2} h;
                    for (uint j = 0; j < 4u; ++j) {{
                        const uint off = (j == 0u ? wv << {sh + 2} : wv >> (8u * j - {sh + 2}u)) & {255 << (sh + 2)}u | lane4;
                        const uint pv = *(const uint*)((const uchar*)lutp + off);
                        const {t2} pp = *(const {t2}*)&pv;
                        const {t2} xx = *(const {t2}*)&xw[j];
                        h = j == 0u ? __hmul2(pp, xx) : __hfma2(pp, xx, h);
                    }}
                    const float2 f = {tof}(h);
                    part[r] += f.x + f.y;
                }}
            }}
"""
    p.append([old, new + tail])
    return p

cases = []
def add(fmt, kw, n, k, dtype, rpw, slices, wg=128, reps=32, base=False):
    ov = {"rpw": rpw, "slices": slices}
    if wg != 128: ov["wg"] = wg
    if not base:
        src = kernel_src(dtype, rpw, slices, wg, kw.get("nested", False), fmt)
        ov["patch"] = patch_for(src, dtype, rpw, reps)
    cases.append([fmt, kw, n, k, 1, dtype, ov])

if __name__ == "__main__":
    for shape, dt in (((8192, 8192), "bf16"), ((4096, 14336), "f16")):
        nst = {"nested": True}
        add("nf4", nst, *shape, dt, 4, 4, base=True)
        for rpw, sl, wg in ((4, 4, 128), (4, 4, 256), (4, 4, 512), (4, 2, 256), (4, 1, 256), (2, 2, 256), (8, 2, 256), (8, 4, 256)):
            add("nf4", nst, *shape, dt, rpw, sl, wg)
        add("nf4", nst, *shape, dt, 4, 4, 256, reps=16)
        add("nf4", nst, *shape, dt, 4, 4, 256, reps=1)
    add("fp4", {"nested": True}, 8192, 8192, "bf16", 4, 4, base=True)
    add("fp4", {"nested": True}, 8192, 8192, "bf16", 4, 4, 256)
    add("nf4", {}, 4096, 14336, "f16", 4, 4, base=True)
    add("nf4", {}, 4096, 14336, "f16", 4, 4, 256)
    json.dump(cases, open(sys.argv[1], "w"))
    print(len(cases))
