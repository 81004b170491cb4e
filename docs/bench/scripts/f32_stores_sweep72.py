"""Sweep 72's cases (run 175): dequantize to f32 where a chunk of 8 elements stores 32 bytes as two
16-byte stores, so each store instruction of a warp writes every other 16 bytes of 1 KB. The what-if:
chunks of 4 elements (one 16-byte store, the warp's 512 bytes contiguous) and twice the turns; for the
4-bit rows, whose 4-element chunk is 2 code bytes (not yet a chunk the op takes), as a source patch of
the cpi 2 kernel into cpi 4 with one 16-bit code load. argv[1]: the JSON to write."""
import json, sys

HALF = [["const size_t chunk0 = (size_t)blockIdx.x * 512u + threadIdx.x;\n    for (uint chunk = 0; chunk < 2u; ++chunk) {\n"
         "        const size_t e0 = (chunk0 + chunk * 256u) * 8u;",
         "const size_t chunk0 = (size_t)blockIdx.x * 1024u + threadIdx.x;\n    for (uint chunk = 0; chunk < 4u; ++chunk) {\n"
         "        const size_t e0 = (chunk0 + chunk * 256u) * 4u;"],
        ["if (e0 + 8u <= n) {", "if (e0 + 4u <= n) {"],
        ["w[0] = ((const uint*)cp)[0];\n            for (uint i = 0; i < 8u; ++i) {",
         "w[0] = (uint)((const ushort*)cp)[0];\n            for (uint i = 0; i < 4u; ++i) {"],
        ["            ((float4*)(out + e0))[1] = make_float4(v[4], v[5], v[6], v[7]);\n", ""]]

if __name__ == "__main__":
    cases = []
    add = lambda fmt, kw, **ov: cases.append([fmt, kw, 8192, 8192, 1, "f32", {"op": "dequantize", **ov}])
    nst, bs = {"nested": True, "blocksize": 64}, {"blocksize": 64}
    for fmt, kw in (("nf4", nst), ("nf4", bs), ("fp4", nst)):
        add(fmt, kw)
        add(fmt, kw, patch=HALF)
    for fmt, kw in (("blockwise8", {"blocksize": 256}), ("int8", {"scale_mode": "row"}), ("q8_0", {})):
        add(fmt, kw)
        add(fmt, kw, ept=4)
        add(fmt, kw, ept=4, cpi=8 if fmt != "q8_0" else 2)
    add("int4", {"scale_mode": "row"})
    add("q4_0", {})
    json.dump(cases, open(sys.argv[1], "w"))
    print(len(cases))
