"""CUDA C++ (nvcc): cuda_fp16/cuda_bf16 intrinsics, explicitly rounded arithmetic, warp shuffles, dp4a."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..cexpr import paren
from .base import Dialect

_FP16_NAMES = ("__half", "__hsub", "__float2half", "__half2float", "__ushort_as_half", "__half_as_ushort")

# Not static: nvcc warns (#177) about unused static helpers; inline functions need no static.
_HELPERS = {
    "qk_f32_to_f16": """\
/* f32 -> f16 bits, round to nearest even */
__device__ __forceinline__ ushort qk_f32_to_f16(float f) { return __half_as_ushort(__float2half_rn(f)); }""",
    "qk_f16_to_f32": """\
/* f16 bits -> f32, exact */
__device__ __forceinline__ float qk_f16_to_f32(ushort h) { return __half2float(__ushort_as_half(h)); }""",
    "qk_f32_to_bf16": """\
/* f32 -> bf16 bits, round to nearest even (the native conversion) */
__device__ __forceinline__ ushort qk_f32_to_bf16(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}""",
    "qk_f16_bits_rz": """\
/* the f16 bits of v >= 0 rounded toward zero (the native conversion; 65504 for every finite v above it) */
__device__ __forceinline__ uint qk_f16_bits_rz(float v) { return __half_as_ushort(__float2half_rz(v)); }""",
    "qk_half": """\
/* the half with these bits */
__device__ __forceinline__ __half qk_half(uint bits) { return __ushort_as_half((ushort)bits); }""",
    **{f"qk_pack_{t}x2": f"""\
/* two floats -> the bits of a {t} pair (lo in bits 0-15), each rounded to nearest even */
__device__ __forceinline__ uint qk_pack_{t}x2(float lo, float hi) {{
    const {v} h = {f}(lo, hi);
    return *(const uint*)&h;
}}""" for t, v, f in (("f16", "__half2", "__floats2half2_rn"), ("bf16", "__nv_bfloat162", "__floats2bfloat162_rn"))},
    **{f"qk_h{op}2": f"""\
/* the f16 pair a {sym} b (half2 {op}, rounded to nearest) */
__device__ __forceinline__ uint qk_h{op}2(uint a, uint b) {{
    const __half2 r = __h{op}2(*(const __half2*)&a, *(const __half2*)&b);
    return *(const uint*)&r;
}}""" for op, sym in (("sub", "-"), ("mul", "*"), ("add", "+"))},
    **{f"qk_{p}{op}2": f"""\
/* {doc} ({v} {op}) */
__device__ __forceinline__ uint qk_{p}{op}2(uint a, uint b) {{
    const {v} r = __h{op}2(*(const {v}*)&a, *(const {v}*)&b);
    return *(const uint*)&r;
}}""" for p, v, op, doc in (("h", "__half2", "gt", "1.0 in each half of the f16 pair a above b's, else 0"),
                            ("b", "__nv_bfloat162", "gt", "1.0 in each half of the bf16 pair a above b's, else 0"),
                            ("b", "__nv_bfloat162", "add", "the bf16 pair a + b, each half rounded once"))},
    # the byte-pair GEMV's products: f16 pairs (sm_53 on), bf16 pairs (sm_80 on)
    "qk_hfma2": """\
/* the f16 pair a * b + c, each half rounded once (half2 fma) */
__device__ __forceinline__ uint qk_hfma2(uint a, uint b, uint c) {
    const __half2 r = __hfma2(*(const __half2*)&a, *(const __half2*)&b, *(const __half2*)&c);
    return *(const uint*)&r;
}""",
    "qk_bmul2": """\
/* the bf16 pair a * b, each half rounded once (bfloat162 mul) */
__device__ __forceinline__ uint qk_bmul2(uint a, uint b) {
    const __nv_bfloat162 r = __hmul2(*(const __nv_bfloat162*)&a, *(const __nv_bfloat162*)&b);
    return *(const uint*)&r;
}""",
    "qk_bfma2": """\
/* the bf16 pair a * b + c, each half rounded once (bfloat162 fma) */
__device__ __forceinline__ uint qk_bfma2(uint a, uint b, uint c) {
    const __nv_bfloat162 r = __hfma2(*(const __nv_bfloat162*)&a, *(const __nv_bfloat162*)&b,
                                     *(const __nv_bfloat162*)&c);
    return *(const uint*)&r;
}""",
    **{f"qk_mma_{t}": f"""\
/* c += a . b over one warp's fragments: PTX mma m16n8k16, {t} products added in f32. Lane l holds
   a's rows l / 4 and l / 4 + 8 and b's column l / 4 (the kernel's comment says which elements) */
__device__ __forceinline__ void qk_mma_{t}(float* c, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1) {{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 "
                 "{{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}}""" for t in ("f16", "bf16")},
    "qk_mma_s8": """\
/* c += a . b over one warp's fragments: PTX mma m16n8k32, signed bytes, products added in s32 (exact).
   Lane l holds a's rows l / 4 and l / 4 + 8 and b's column l / 4 (the kernel's comment says which k) */
__device__ __forceinline__ void qk_mma_s8(int* c, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}""",
    "qk_lut16x8": """\
/* the eight 4-bit codes of w (nibble n: bits 4n..4n+3) as entries of the 16-byte table t0..t3
   (entry e: byte e % 4 of word e / 4): byte i of *lo holds the entry of byte i's low nibble of w,
   byte i of *hi that of its high nibble. A byte permute reads its selector as four nibbles, so w's
   codes (bits 0-2) select entries from each half of the table as they stand; bit 3 picks the half
   (a nibble of 4 + n takes byte n of the upper half's result) */
__device__ __forceinline__ void qk_lut16x8(uint w, uint t0, uint t1, uint t2, uint t3, uint* lo, uint* hi) {
    const uint s = w & 0x77777777u;  /* bits 0-2 of each code */
    /* nibble n: n % 4, plus 4 where code n's bit 3 is set (0x88888888) */
    const uint half = 0x32103210u | ((w & 0x88888888u) >> 1);
    const uint a = __byte_perm(__byte_perm(t0, t1, s), __byte_perm(t2, t3, s), half);  /* nibbles 0-3 */
    const uint b = __byte_perm(__byte_perm(t0, t1, s >> 16), __byte_perm(t2, t3, s >> 16), half >> 16);
    /* a and b hold the entries in nibble order (low, high, low, high): even bytes to lo, odd to hi */
    *lo = __byte_perm(a, b, 0x6420u);
    *hi = __byte_perm(a, b, 0x7531u);
}""",
    "qk_warp_sum": """\
/* the sum over the 32 lanes of a warp, by butterfly shuffles */
__device__ __forceinline__ float qk_warp_sum(float x) {
    /* mask 0xffffffff: every lane of the warp takes part */
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}""",
    "qk_warp_max": """\
/* the maximum over the 32 lanes of a warp, by butterfly shuffles */
__device__ __forceinline__ float qk_warp_max(float x) {
    /* mask 0xffffffff: every lane of the warp takes part */
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}""",
}


# The warp matrix products are PTX asm statements: NVIDIA's OpenCL compiler takes them as they are.
MMA_HELPERS = ("qk_mma_f16", "qk_mma_bf16", "qk_mma_s8")


def ptx_helper(name: str, qualifier: str) -> str:
    """The text of CUDA helper `name` (one of MMA_HELPERS) with another function qualifier."""
    assert name in MMA_HELPERS, name
    return _HELPERS[name].replace("__device__ __forceinline__", qualifier, 1)


class PTXMatrixProducts:
    """The warp matrix products' statements, calls of the MMA_HELPERS, for the dialects of targets
    with t.mma (CUDA; NVIDIA's OpenCL through inline PTX)."""

    def mma(self, dtype: str, c: str, a: tuple[str, str, str, str], b: tuple[str, str]) -> str:
        """The statement c += a . b over a warp's f16 or bf16 fragments (PTX mma m16n8k16)."""
        return f"qk_mma_{dtype}({c}, {', '.join(a)}, {', '.join(b)});"

    def mma_i8(self, c: str, a: tuple[str, str, str, str], b: tuple[str, str]) -> str:
        """The statement c += a . b over a warp's signed-byte fragments, int c[4] (PTX mma m16n8k32)."""
        return f"qk_mma_s8({c}, {', '.join(a)}, {', '.join(b)});"


@dataclass(frozen=True)
class CUDADialect(PTXMatrixProducts, Dialect):
    name: ClassVar[str] = "cuda"
    lang: ClassVar[str] = "CUDA C++"
    suffix: ClassVar[str] = ".cu"
    kernel_prefix: ClassVar[str] = 'extern "C" __global__ '
    global_qual: ClassVar[str] = ""
    restrict: ClassVar[str] = "__restrict__ "
    local_qual: ClassVar[str] = "__shared__"
    constant_qual: ClassVar[str] = "__constant__"
    # Constant memory serves a warp one address at a time: a code table's copy to shared memory reads
    # 16-256 distinct addresses a warp, a quantizer's magnitudes one a lane. Read-only global memory
    # serves them in coalesced or cached loads (H200, run 150: dequantize nf4 nested -> bf16 52.5 ->
    # 49.6 us, its M = 1 GEMV 26.2 -> 24.2).
    table_qual: ClassVar[str | None] = "__device__ const"
    prefetch_l2: ClassVar[str | None] = 'asm volatile("prefetch.global.L2 [%0];" :: "l"({ptr}));'
    inline: ClassVar[str] = "__device__ __forceinline__"
    barrier_stmt: ClassVar[str] = "__syncthreads();"
    aligned_local: ClassVar[str] = "{qual} __align__({align}) {ctype} {name}[{count}];"
    ids: ClassVar[dict[str, str]] = {"gid": "(blockIdx.{x} * blockDim.{x} + threadIdx.{x})", "lid": "threadIdx.{x}",
                                     "group": "blockIdx.{x}", "lsize": "blockDim.{x}",
                                     "gid_wide": "((size_t)blockIdx.{x} * blockDim.{x} + threadIdx.{x})"}  # fmt: skip
    as_uint: ClassVar[str] = "__float_as_uint"
    as_float: ClassVar[str] = "__uint_as_float"
    fmax: ClassVar[str] = "fmaxf"
    fabs: ClassVar[str] = "fabsf"
    fmin: ClassVar[str] = "fminf"
    type_names: ClassVar[dict[str, str]] = {"long": "long long"}

    def helpers(self) -> dict[str, str]:
        return {**super().helpers(), **_HELPERS}

    def prelude_head(self, text: str | None) -> str:
        lines = []
        if text is None or any(n in text for n in _FP16_NAMES):
            lines.append("#include <cuda_fp16.h>")
        if text is None or "__bfloat16" in text or "__float2bfloat16" in text or "__nv_bfloat16" in text:
            lines.append("#include <cuda_bf16.h>")
        return "\n".join(lines + self._typedefs(text))

    def _attrs(self, wg: int, dims: int, subgroup: int | None, min_groups: int = 0) -> list[str]:
        return [f"__launch_bounds__({wg}{f', {min_groups}' if min_groups else ''})"]

    def mul_rn(self, a: str, b: str) -> str:
        return f"__fmul_rn({a}, {b})"

    def add_rn(self, a: str, b: str) -> str:
        return f"__fadd_rn({a}, {b})"

    def div_rn(self, a: str, b: str) -> str:
        return f"__fdiv_rn({a}, {b})"

    def load_half(self, byte_ptr: str) -> str:
        return f"__half2float(*(const __half*){paren(byte_ptr)})"

    def make_vec(self, vtype: str, items: str) -> str:
        return f"make_{vtype}({items})"

    def fast_f16(self) -> bool:
        return True  # every CUDA architecture qkgen builds for has half arithmetic

    def _fast_code_f16(self, bits: str, bias_bits: str) -> str:
        return f"__half2float(__hsub(qk_half(0x6400u | {bits}), qk_half({bias_bits})))"

    def sg_lane(self) -> str:
        return "(threadIdx.x & 31u)"

    def subgroup_sum(self, x: str) -> str:
        return f"qk_warp_sum({x})"

    def subgroup_max(self, x: str) -> str:
        return f"qk_warp_max({x})"

    def shuffle_xor(self, x: str, mask: str) -> str | None:
        return f"__shfl_xor_sync(0xffffffffu /* every lane of the warp */, {x}, {mask})"

    def dot4_i8(self, a: str, b: str, acc: str) -> str:
        return f"__dp4a((int){paren(a)}, (int){paren(b)}, {acc})"

    def pack_x2(self, dtype: str, lo: str, hi: str) -> str:
        return f"qk_pack_{dtype}x2({lo}, {hi})"

    def funnel_r(self, lo: str, hi: str, shift: str) -> str:
        return f"__funnelshift_r({lo}, {hi}, {shift})"

    def warp_barrier(self) -> str:
        return "__syncwarp();"

    # Programmatic dependent launch (target.grid_dependency, sm_90 on; no other dialect spells it):
    # wait for the grid before this one in its stream to end, its writes visible; let the grid after
    # this one start now (it waits for this one itself).
    def grid_wait(self) -> str:
        return 'asm volatile("griddepcontrol.wait;" ::: "memory");'

    def grid_release(self) -> str:
        return 'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");'


DIALECT = CUDADialect
