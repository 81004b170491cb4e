"""OpenCL C (1.2 and 3.0): vload_half/vstore_half for f16 without cl_khr_fp16, sub-groups and the
integer dot product where the target has them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..cexpr import paren
from .base import Dialect
from .cuda import MMA_HELPERS, PTXMatrixProducts, ptx_helper

# NVIDIA's OpenCL C has no cl_khr_integer_dot_product, but its compiler takes inline PTX (GNU asm
# syntax, as in CUDA): dp4a.s32.s32 is what CUDA's __dp4a compiles to. Not volatile: it has no side
# effects, so the compiler may schedule it like any arithmetic.
_DP4A_PTX = """\
/* acc + the dot product of the four signed bytes of a and b: PTX dp4a (sm_61 and later) */
inline int qk_dp4a(uint a, uint b, int acc) {
    int r;
    asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}"""

# f16 <-> f32 of register bits by PTX cvt where the compiler takes inline PTX: the byte-pair helpers
# below put their array on NVIDIA's stack (local memory), a round trip a conversion (H200 run 90,
# NVIDIA OpenCL / CUDA, q4_0 4096 x 14336 f16 x M = 1, cold: float path 29.0 / 17.8 us, mma 82.6 / 19.2).
_F16_PTX = {
    "qk_f32_to_f16": """\
/* f32 -> f16 bits, round to nearest even: PTX cvt.rn */
inline ushort qk_f32_to_f16(float f) {
    uint h;
    asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; cvt.u32.u16 %0, t; }" : "=r"(h) : "f"(f));
    return (ushort)h;
}""",
    "qk_f16_to_f32": """\
/* f16 bits -> f32, exact: PTX cvt */
inline float qk_f16_to_f32(ushort h) {
    float f;
    asm("{ .reg .b16 t; cvt.u16.u32 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "r"((uint)h));
    return f;
}""",
}
# and its f16 pair arithmetic as the native f16x2 instructions (sm_53 on) where the base dialect
# computes each half in f32 between two conversions
_HALF2_PTX = {
    f"qk_h{op}2": f"""\
/* the f16 pair a {sym} b, rounded to nearest even: PTX {op}.rn.f16x2 */
inline uint qk_h{op}2(uint a, uint b) {{
    uint r;
    asm("{op}.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}}""" for op, sym in (("sub", "-"), ("mul", "*"))
}


def _sm(arch: str) -> int:
    """The compute capability of an NVIDIA arch ("sm_90" -> 90; 0 where it is not one)."""
    return int(arch[3:]) if arch.startswith("sm_") and arch[3:].isdigit() else 0


# Its OpenCL C has no sub-groups either, but the warp is there: lanes 32 consecutive work-items (as
# CUDA's threads), and PTX shfl.sync (sm_70 on) moves values between them as CUDA's
# __shfl_xor_sync does. Volatile: a shuffle must stay where every lane of the warp reaches it.
_WARP_PTX = {
    f"qk_warp_{what}": f"""\
/* the {what} over the 32 lanes of a warp, by butterfly shuffles: PTX shfl.sync (mask 0xffffffff:
   every lane of the warp takes part) */
inline float qk_warp_{what}(float x) {{
    for (int o = 16; o > 0; o >>= 1) {{
        float y;
        asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(o));
        x = {combine};
    }}
    return x;
}}""" for what, combine in (("sum", "x + y"), ("max", "fmax(x, y)"))
}
_WARP_PTX["qk_shfl_xor"] = """\
/* x of the warp's lane (this lane ^ o): PTX shfl.sync (mask 0xffffffff: every lane takes part) */
inline float qk_shfl_xor(float x, uint o) {
    float y;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(y) : "f"(x), "r"(o));
    return y;
}"""


@dataclass(frozen=True)
class OpenCLDialect(PTXMatrixProducts, Dialect):
    name: ClassVar[str] = "opencl"
    lang: ClassVar[str] = "OpenCL C"
    suffix: ClassVar[str] = ".cl"
    kernel_prefix: ClassVar[str] = "__kernel "
    global_qual: ClassVar[str] = "__global "
    restrict: ClassVar[str] = "restrict "
    local_qual: ClassVar[str] = "__local"
    constant_qual: ClassVar[str] = "__constant"
    barrier_stmt: ClassVar[str] = "barrier(CLK_LOCAL_MEM_FENCE);"
    local_ptr: ClassVar[str] = "__local {vtype}*"
    ids: ClassVar[dict[str, str]] = {"gid": "(uint)get_global_id({d})", "lid": "(uint)get_local_id({d})",
                                     "group": "(uint)get_group_id({d})", "lsize": "(uint)get_local_size({d})",
                                     "gid_wide": "get_global_id({d})"}  # fmt: skip
    as_uint: ClassVar[str] = "as_uint"
    as_float: ClassVar[str] = "as_float"
    fmax: ClassVar[str] = "fmax"
    fabs: ClassVar[str] = "fabs"
    fmin: ClassVar[str] = "fmin"
    inline: ClassVar[str] = "inline"

    def helpers(self) -> dict[str, str]:
        # f16 <-> f32 through vstore_half_rte / vload_half on private memory: core OpenCL C 1.2,
        # no cl_khr_fp16 needed (NVIDIA and pocl have none). The half goes through a byte pair, not
        # a ushort seen as a half: that aliasing let pocl's LLVM drop the store and return 0 (the
        # mma path's outputs on pocl, an AMD host); a char object's store aliases every load. Targets
        # with inline PTX (NVIDIA) take PTX cvt and f16x2 instead (_F16_PTX, _HALF2_PTX), below.
        return {
            **super().helpers(),
            "qk_f32_to_f16": "/* f32 -> f16 bits, round to nearest even (core OpenCL C: no cl_khr_fp16 needed); the\n"
                             "   half is stored to bytes, which may be read whatever type wrote them */\n"
                             "inline ushort qk_f32_to_f16(float f) {\n"
                             "    __attribute__((aligned(2))) uchar b[2];\n"
                             "    vstore_half_rte(f, 0, (__private half*)b);\n"
                             "    return (ushort)(b[0] | (b[1] << 8));\n}",
            "qk_f16_to_f32": "/* f16 bits -> f32, exact; the bits are stored as bytes, which a half load may read */\n"
                             "inline float qk_f16_to_f32(ushort h) {\n"
                             "    __attribute__((aligned(2))) uchar b[2];\n"
                             "    b[0] = (uchar)h;\n"
                             "    b[1] = (uchar)(h >> 8);\n"
                             "    return vload_half(0, (__private const half*)b);\n}",
            "qk_half": "/* the half with these bits (needs cl_khr_fp16) */\n"
                       "inline half qk_half(uint bits) { return as_half((ushort)bits); }",
            "qk_hfma2": "/* the f16 pair a * b + c, each half rounded once (needs cl_khr_fp16) */\n"
                        "inline uint qk_hfma2(uint a, uint b, uint c) {\n"
                        "    return as_uint(fma(as_half2(a), as_half2(b), as_half2(c)));\n}",
            **(_F16_PTX if self.target.inline_ptx else {}),
            **(_HALF2_PTX if self.target.inline_ptx and _sm(self.target.arch) >= 53 else {}),
            **({"qk_dp4a": _DP4A_PTX} if self.target.inline_ptx else {}),
            **(_WARP_PTX if self.warp_ptx else {}),
            **({n: ptx_helper(n, "inline") for n in MMA_HELPERS} if self.target.mma else {}),
        }  # fmt: skip

    @property
    def warp_ptx(self) -> bool:
        """Sub-groups as NVIDIA's warps, through PTX shuffles (a target with inline PTX and lanes)."""
        return self.target.inline_ptx and self.subgroups

    def prelude_head(self, text: str | None) -> str:
        lines = []
        if text is None or "qk_half(" in text or "qk_hfma2(" in text:
            lines.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
        lines.append("#pragma OPENCL FP_CONTRACT OFF")
        return "\n".join(lines)

    def _attrs(self, wg: int, dims: int, subgroup: int | None, min_groups: int = 0) -> list[str]:
        attrs = [f"__attribute__((reqd_work_group_size({wg}, 1, 1)))"]
        if subgroup and self.subgroups and not self.warp_ptx:  # a warp is always 32 lanes
            attrs.append(f"__attribute__((intel_reqd_sub_group_size({subgroup})))")
        return attrs

    def scalar(self, ctype: str, name: str) -> str:
        # OpenCL C forbids size_t kernel arguments: ulong is its 64-bit unsigned type
        return super().scalar("ulong" if ctype == "size_t" else ctype, name)

    def acc_rn(self, acc: str, term: str) -> str:
        # fma(term, 1, acc) is acc + term with one rounding, as the plain sum. Intel's CPU runtime
        # splits loop-carried float sums into partial sums in the scalar code it runs for work-items
        # it does not vectorize (those of a kernel with barriers, the K-quant searches with lanes),
        # FP_CONTRACT OFF or not; an fma chain it leaves in order (SYCLDialect.acc_rn: the same).
        return f"fma({term}, 1.0f, {acc})"

    def vget(self, var: str, i: int) -> str:
        return f"{var}.s{i:x}"

    def load_half(self, byte_ptr: str) -> str:
        # vload_half is core OpenCL C 1.2: it needs no cl_khr_fp16 (NVIDIA, pocl have none).
        return f"vload_half(0, (__global const half*){paren(byte_ptr)})"

    def sg_lane(self) -> str:
        return "((uint)get_local_id(0) & 31u)" if self.warp_ptx else "(uint)get_sub_group_local_id()"

    def subgroup_sum(self, x: str) -> str:
        return f"qk_warp_sum({x})" if self.warp_ptx else f"sub_group_reduce_add({x})"

    def subgroup_max(self, x: str) -> str:
        return f"qk_warp_max({x})" if self.warp_ptx else f"sub_group_reduce_max({x})"

    def shuffle_xor(self, x: str, mask: str) -> str | None:
        # OpenCL C's own xor shuffle (cl_khr_subgroup_shuffle) is not on every device with sub-groups
        if self.warp_ptx:
            return f"qk_shfl_xor({x}, {mask})"
        return f"intel_sub_group_shuffle_xor({x}, {mask})" if self.target.intel_subgroups else None

    def warp_barrier(self) -> str:
        # PTX bar.warp.sync, as CUDA's __syncwarp: the warp's lanes meet, their local memory ordered
        if self.warp_ptx:
            return 'asm volatile("bar.warp.sync 0xffffffff;" ::: "memory");'
        return super().warp_barrier()

    def dot4_i8(self, a: str, b: str, acc: str) -> str:
        # cl_khr_integer_dot_product's 4x8-bit packed form: no pragma needed (checked on Intel's CPU runtime)
        if not self.dot4:
            return super().dot4_i8(a, b, acc)
        if self.target.inline_ptx:
            return f"qk_dp4a({a}, {b}, {acc})"
        return f"({acc} + dot_4x8packed_ss_int({a}, {b}))"


DIALECT = OpenCLDialect
