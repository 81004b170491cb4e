"""Sweep 68's cases (run 171): dequantize with an L2 prefetch of the codes a turn or more ahead (the
chunk a work-item decodes `ahead` turns later, wg chunks a turn), guarded so that nothing past the
tensor is asked for; or every turn's codes asked for at the start, before the tables' barrier. Source
patches on the rendered kernels, every output checked bit for bit. argv[1]: the JSON to write."""
import json, re, sys
from qkgen.kernels.render import render

PF = 'asm volatile("prefetch.global.L2 [%0];" :: "l"({ptr}));'


def source(fmt, kw, dtype, ov):
    return render("dequantize", fmt, "cuda-sm90", dtype=dtype, **kw, **ov).source


def ahead(src, turns):
    """The patch: after the chunk's code pointer, a guarded prefetch `turns` turns ahead."""
    line = re.search(r"\n( +)const uchar\* cp = codes \+ (e0(?: / (\d)u)?);\n", src)
    ept = int(re.search(r"\* (\d+)u;\n +if \(e0 >= n\) return;", src).group(1))
    wg = int(re.search(r"__launch_bounds__\((\d+)\)", src).group(1))
    per_byte = int(line.group(3) or 1)
    step = turns * wg * ept
    pad = line.group(1)
    new = line.group(0) + f"{pad}if (e0 + {step}u < n) {PF.format(ptr=f'cp + {step // per_byte}u')}\n"
    return [[line.group(0), new]]


def at_start(src):
    """The patch: every turn's codes asked for before the barrier."""
    wg = int(re.search(r"__launch_bounds__\((\d+)\)", src).group(1))
    cpi = int(re.search(r"chunk < (\d+)u", src).group(1))
    ept = int(re.search(r"\* (\d+)u;\n +if \(e0 >= n\) return;", src).group(1))
    per_byte = int(re.search(r"const uchar\* cp = codes \+ e0(?: / (\d)u)?;", src).group(1) or 1)
    pre = ("    for (uint c = 0; c < %du; ++c) {  /* every turn's codes, asked for before the barrier */\n"
           "        const size_t e = ((size_t)blockIdx.x * %du + threadIdx.x + c * %du) * %du;\n"
           "        if (e < n) %s\n    }\n") % (cpi, wg * cpi, wg, ept, PF.format(ptr=f"codes + e / {per_byte}u"))
    return [["    __syncthreads();\n", pre + "    __syncthreads();\n"]]


if __name__ == "__main__":
    cases = []
    def add(fmt, kw, n, k, dtype, variant=None, **ov):
        o = dict(op="dequantize", **ov)
        if variant:
            src = source(fmt, kw, dtype, ov)
            o["patch"] = at_start(src) if variant == "start" else ahead(src, variant)
        cases.append([fmt, kw, n, k, 1, dtype, o])
    nst = {"nested": True, "blocksize": 64}
    for v in (None, 1, 2, "start"):
        add("nf4", nst, 8192, 8192, "bf16", v)
    for v in (1, 2):
        add("nf4", nst, 8192, 8192, "bf16", v, cpi=8)
        add("nf4", nst, 8192, 8192, "bf16", v, cpi=2)
    add("nf4", nst, 8192, 8192, "bf16", 1, ept=16)
    add("nf4", nst, 8192, 8192, "bf16", None, ept=16)
    for n, k in ((4096, 14336), (4096, 4096)):
        add("nf4", nst, n, k, "bf16")
        add("nf4", nst, n, k, "bf16", 1)
    for dt in ("f16", "f32"):
        add("nf4", nst, 8192, 8192, dt)
        add("nf4", nst, 8192, 8192, dt, 1)
    for fmt, kw in (("fp4", nst), ("nf4", {"blocksize": 64}), ("fp4", {"blocksize": 64}),
                    ("blockwise8", {"blocksize": 256}), ("int4", {"scale_mode": "row"}),
                    ("int4", {"scale_mode": "group", "blocksize": 128}), ("int8", {"scale_mode": "row"})):
        add(fmt, kw, 8192, 8192, "bf16")
        add(fmt, kw, 8192, 8192, "bf16", 1)
        add(fmt, kw, 8192, 8192, "bf16", 2)
    json.dump(cases, open(sys.argv[1], "w"))
    print(len(cases))
