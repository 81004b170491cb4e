"""Sweep 62's cases (run 164): sweep 60's byte-pair patch with prefetch, across rows a lane group,
slices and wg. argv[1]: the JSON to write. Run from this folder (it imports pair_table_patch)."""
import json, sys
import pair_table_patch as mkpatch
from qkgen.kernels.render import render

def src_of(fmt, kw, dtype, ov):
    params = dict(dtype=dtype, blocksize=64, nested=kw.get("nested", False), mmax=1, **{k: v for k, v in ov.items()})
    return render("gemv", fmt, "cuda-sm90", **params).source

if __name__ == "__main__":
    cases = []
    def add(fmt, kw, n, k, dtype, pairs=True, **ov):
        ov = dict(ov)
        if pairs:
            ov["patch"] = mkpatch.patch_for(src_of(fmt, kw, dtype, ov), dtype, ov["rpw"], 32)
        cases.append([fmt, kw, n, k, 1, dtype, ov])

    nst = {"nested": True}
    for shape, dt in (((8192, 8192), "bf16"), ((4096, 14336), "f16")):
        add("nf4", nst, *shape, dt, pairs=False, rpw=4, slices=4)
        add("nf4", nst, *shape, dt, pairs=False, rpw=4, slices=4, prefetch=True)
        for rpw, sl, wg, pf in ((4, 2, 256, True), (4, 1, 256, True), (4, 4, 256, True), (4, 4, 512, True), (8, 2, 256, True), (8, 1, 256, True), (8, 4, 256, True),
                                (4, 2, 512, False), (4, 2, 512, True), (4, 1, 512, True), (8, 1, 512, True)):
            add("nf4", nst, *shape, dt, rpw=rpw, slices=sl, wg=wg, **({"prefetch": True} if pf else {}))
    json.dump(cases, open(sys.argv[1], "w"))
    print(len(cases))
