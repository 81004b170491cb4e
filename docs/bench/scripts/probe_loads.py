"""A what-if probe for gemv_sweep.py (its "loads" override): word runs loaded through aligned vectors."""
import contextlib

@contextlib.contextmanager
def vector_loads(which):
    """A probe: runs of words at 2-byte ("vec2"), 4-byte ("vec4") or either ("vec24") alignment loaded
    as the 16-byte aligned vectors that cover them, the words then picked by selects and a funnel
    shift (fewer L1 wavefronts than a word load each). CUDA only; the last vector may read up to 14
    bytes past the run (within its aligned 16 bytes), so not for production as it stands."""
    if not which:
        yield
        return
    from qkgen.kernels.dialects import loads as L
    from qkgen.kernels import render as R
    aligns = {"vec2": (2,), "vec4": (4,), "vec24": (2, 4)}[which]
    orig = L.load_u32

    def patched(d, dst, src, nbytes, align, words=False):
        nw = nbytes // 4
        if align not in aligns or nw < 2:
            return orig(d, dst, src, nbytes, align, words)
        nv = (nbytes + 16 - align + 15) // 16  # vectors covering the run at its worst offset
        lines = [f"const size_t {dst}_a = (size_t)({src});", f"const uint {dst}_o = (uint)({dst}_a & 15u);",
                 f"const uint4* {dst}_p = (const uint4*)({dst}_a - {dst}_o);", f"uint {dst}_u[{4 * nv}];"]
        for v in range(nv):
            lines.append(f"{{ const uint4 t = {dst}_p[{v}]; {dst}_u[{4*v}] = t.x; {dst}_u[{4*v+1}] = t.y; "
                         f"{dst}_u[{4*v+2}] = t.z; {dst}_u[{4*v+3}] = t.w; }}")
        lines.append(f"const uint {dst}_q = {dst}_o >> 2u;")
        last = 4 * nv - 1
        pick = lambda k: (f"({dst}_q == 0u ? {dst}_u[{min(k, last)}] : {dst}_q == 1u ? {dst}_u[{min(k + 1, last)}] : "
                          f"{dst}_q == 2u ? {dst}_u[{min(k + 2, last)}] : {dst}_u[{min(k + 3, last)}])")
        ext = nw + (1 if align < 4 else 0)
        for k in range(ext):
            lines.append(f"const uint {dst}_s{k} = {pick(k)};")
        for k in range(nw):
            if align < 4:
                lines.append(f"{dst}[{k}] = __funnelshift_r({dst}_s{k}, {dst}_s{k + 1}, ({dst}_o & 3u) * 8u);")
            else:
                lines.append(f"{dst}[{k}] = {dst}_s{k};")
        return "\n".join(lines)

    L.load_u32 = patched
    R._render.cache_clear()
    try:
        yield
    finally:
        L.load_u32 = orig
        R._render.cache_clear()
