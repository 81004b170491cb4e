"""Helpers of byte arithmetic written once in the C subset ({inline} is the dialect's spelling), for
dialects without the native instructions (CUDA spells them with dp4a and byte permutes)."""

DOT4_PORTABLE = """\
/* acc + the dot product of the four signed bytes of a and b */
{inline} int qk_dot4_i8(uint a, uint b, int acc) {
    /* (int)(char) sign-extends a byte */
    return acc + (int)(char)(a & 0xffu) * (int)(char)(b & 0xffu)
               + (int)(char)((a >> 8) & 0xffu) * (int)(char)((b >> 8) & 0xffu)
               + (int)(char)((a >> 16) & 0xffu) * (int)(char)((b >> 16) & 0xffu)
               + (int)(char)((a >> 24) & 0xffu) * (int)(char)((b >> 24) & 0xffu);
}"""

LUT16X8_PORTABLE = """\
/* the eight 4-bit codes of w (nibble n: bits 4n..4n+3) as entries of the 16-byte table t0..t3
   (entry e: byte e % 4 of word e / 4): byte i of *lo holds the entry of byte i's low nibble of w,
   byte i of *hi that of its high nibble. Two scalars, no array indexed in the loop: PoCL 3.0 got such
   an array wrong where the caller's loop holds barriers (gemv_int8mma_sub's product). */
{inline} void qk_lut16x8(uint w, uint t0, uint t1, uint t2, uint t3, uint* lo, uint* hi) {
    uint l = 0u, h = 0u;
    for (uint i = 0u; i < 4u; ++i) {  /* byte i of w: its low nibble el, its high one eh */
        const uint el = (w >> (8u * i)) & 15u;
        const uint eh = (w >> (8u * i + 4u)) & 15u;
        const uint tl = el < 8u ? (el < 4u ? t0 : t1) : (el < 12u ? t2 : t3);
        const uint th = eh < 8u ? (eh < 4u ? t0 : t1) : (eh < 12u ? t2 : t3);
        l |= ((tl >> ((el & 3u) * 8u)) & 0xffu) << (8u * i);
        h |= ((th >> ((eh & 3u) * 8u)) & 0xffu) << (8u * i);
    }
    *lo = l;
    *hi = h;
}"""
