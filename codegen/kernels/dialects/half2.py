"""16-bit pair arithmetic: the dialects' spellings of it (PairArithmetic, a part of every Dialect) and
the helpers of f16 pairs written once in the C subset ({inline} is the dialect's spelling), for
dialects without native half2 instructions (CUDA spells them natively)."""

# f16 pair arithmetic where the f32 result is exact (codes as 1024 + q, f16 d times a small integer):
# one rounding to f16 either way, so these equal native half2 instructions bit for bit.
HALF2 = {op: f"""\
/* the f16 pair a {sym} b, each half computed in f32 and rounded to f16 once */
{{inline}} uint qk_h{op}2(uint a, uint b) {{
    const float lo = qk_f16_to_f32((ushort)a) {sym} qk_f16_to_f32((ushort)b);
    const float hi = qk_f16_to_f32((ushort)(a >> 16)) {sym} qk_f16_to_f32((ushort)(b >> 16));
    return (uint)qk_f32_to_f16(lo) | ((uint)qk_f32_to_f16(hi) << 16);
}}""" for op, sym in (("sub", "-"), ("mul", "*"), ("add", "+"))}
# 1.0 in each half where a's is above b's, else 0 (the quantizer's counts of midpoints below |x|);
# the bf16 pair's add, exact for its small integer counts
PAIR_COUNTS = {
    **{f"qk_{p}gt2": f"""\
/* 1.0 in each half of the {t} pair a whose value is above b's, else 0 (compared in f32: exact) */
{{inline}} uint qk_{p}gt2(uint a, uint b) {{
    const uint lo = {f}((ushort)a) > {f}((ushort)b) ? {one}u : 0u;
    const uint hi = {f}((ushort)(a >> 16)) > {f}((ushort)(b >> 16)) ? {one}u : 0u;
    return lo | hi << 16;
}}""" for p, t, f, one in (("h", "f16", "qk_f16_to_f32", "0x3c00"), ("b", "bf16", "qk_bf16_to_f32", "0x3f80"))},
    "qk_badd2": """\
/* the bf16 pair a + b, each half computed in f32 and rounded to bf16 once */
{inline} uint qk_badd2(uint a, uint b) {
    const float lo = qk_bf16_to_f32((ushort)a) + qk_bf16_to_f32((ushort)b);
    const float hi = qk_bf16_to_f32((ushort)(a >> 16)) + qk_bf16_to_f32((ushort)(b >> 16));
    return (uint)qk_f32_to_bf16(lo) | ((uint)qk_f32_to_bf16(hi) << 16);
}""",
}

# float v >= 0 to the bits of the largest f16 / bf16 at or below it (the FP4 quantizer's midpoints)
F16_BITS_RZ = """\
/* the f16 bits of v >= 0 rounded toward zero: the largest half at or below v (65504 for every v above it) */
{inline} uint qk_f16_bits_rz(float v) {
    const uint b = {as_uint}(v);
    if (b >= 0x477fe000u) return 0x7bffu;  /* 65504 or more */
    if (b < 0x38800000u) return (uint)(v * 16777216.0f);  /* below 2^-14: subnormal, 2^-24 units (exact), truncated */
    return (b - 0x38000000u) >> 13;  /* the exponent rebiased (127 -> 15), the fraction truncated to 10 bits */
}"""
BF16_BITS_RZ = """\
/* the bf16 bits of v >= 0 rounded toward zero: its f32 bits truncated */
{inline} uint qk_bf16_bits_rz(float v) { return {as_uint}(v) >> 16; }"""


class PairArithmetic:
    """Operations on f16 or bf16 pairs held as uint bits (lo in bits 0-15), as helper calls."""

    def sub_f16x2(self, a: str, b: str) -> str:
        """The f16 pair a - b of uint pairs (exact results only: see HALF2)."""
        return f"qk_hsub2({a}, {b})"

    def mul_f16x2(self, a: str, b: str) -> str:
        """The f16 pair a * b of uint pairs, each half rounded once."""
        return f"qk_hmul2({a}, {b})"

    def gt_x2(self, dtype: str, a: str, b: str) -> str:
        """1.0 in each half of the f16 or bf16 pair a whose value is above b's, else 0 (uint pairs)."""
        return f"qk_{'h' if dtype == 'f16' else 'b'}gt2({a}, {b})"

    def add_x2(self, dtype: str, a: str, b: str) -> str:
        """The f16 or bf16 pair a + b of uint pairs, each half rounded once."""
        return f"qk_{'h' if dtype == 'f16' else 'b'}add2({a}, {b})"

    def mul_x2(self, dtype: str, a: str, b: str) -> str:
        """The f16 or bf16 pair a * b of uint pairs, each half rounded once (bf16: where t.bf16)."""
        return self.mul_f16x2(a, b) if dtype == "f16" else f"qk_bmul2({a}, {b})"

    def fma_x2(self, dtype: str, a: str, b: str, c: str) -> str:
        """The f16 or bf16 pair a * b + c of uint pairs, each half rounded once (one fused
        multiply-add; needs the pair arithmetic: t.fp16, t.bf16)."""
        return f"qk_{'h' if dtype == 'f16' else 'b'}fma2({a}, {b}, {c})"
