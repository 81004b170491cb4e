"""Helpers of f16 pair arithmetic written once in the C subset ({inline} is the dialect's spelling),
for dialects without native half2 instructions (CUDA spells them natively)."""

# f16 pair arithmetic where the f32 result is exact (codes as 1024 + q, f16 d times a small integer):
# one rounding to f16 either way, so these equal native half2 instructions bit for bit.
HALF2 = {op: f"""\
/* the f16 pair a {sym} b, each half computed in f32 and rounded to f16 once */
{{inline}} uint qk_h{op}2(uint a, uint b) {{
    const float lo = qk_f16_to_f32((ushort)a) {sym} qk_f16_to_f32((ushort)b);
    const float hi = qk_f16_to_f32((ushort)(a >> 16)) {sym} qk_f16_to_f32((ushort)(b >> 16));
    return (uint)qk_f32_to_f16(lo) | ((uint)qk_f32_to_f16(hi) << 16);
}}""" for op, sym in (("sub", "-"), ("mul", "*"))}
