"""Dialects: everything that differs between CUDA, SYCL and OpenCL C, held as data.

Kernel templates are written once in a C subset (uchar/ushort/uint/int, float arithmetic, for loops)
and call the dialect for everything else: the kernel qualifier and signature, work-item indices,
barriers, local and constant memory, half/bf16 loads and stores, vector loads, and sub-group
reduction with a local-memory fallback. A dialect is a small subclass holding strings and a few
functions, in the manner of tinygrad's renderer/cstyle.py.

A dialect instance carries the typed Target it renders for (fp16 arithmetic, sub-groups, integer
dot products): the class holds spellings, the target holds capabilities, so one class renders for
every device of its backend. Rendering never touches a device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .. import dtypes
from .target import BACKENDS, Target, get_target

# Written once in the C subset; every dialect's prelude includes it. bf16 by bit manipulation,
# round to nearest even, NaN kept quiet: the same rule as the reference codec's round_to.
_COMMON_C = """\
{inline} ushort qk_f32_to_bf16(float f) {
    uint u = {as_uint}(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
{inline} float qk_bf16_to_f32(ushort b) { return {as_float}(((uint)b) << 16); }
"""


@dataclass(frozen=True)
class Dialect:
    """Base dialect. Subclasses fill the class-level tables; instances carry device capabilities."""

    name: ClassVar[str]
    lang: ClassVar[str]  # what the source is, for file suffixes and headers
    suffix: ClassVar[str]
    kernel_prefix: ClassVar[str]
    global_qual: ClassVar[str]  # pointer qualifier of kernel buffer arguments
    restrict: ClassVar[str] = ""
    local_qual: ClassVar[str]
    constant_qual: ClassVar[str]
    inline: ClassVar[str] = "static inline"
    barrier_stmt: ClassVar[str]
    ids: ClassVar[dict[str, str]]  # gid, lid, group, lsize: format strings of {d} (0, 1, 2) / {x} (x, y, z)
    as_uint: ClassVar[str]
    as_float: ClassVar[str]

    target: Target

    # Capabilities read from the target (templates read them as t.*; dialect methods as self.*).
    @property
    def fp16(self) -> bool:
        return self.target.fp16

    @property
    def subgroups(self) -> bool:
        return self.target.subgroups

    @property
    def dot4(self) -> bool:
        return self.target.dot4

    # ---- file level ----
    extra_c: ClassVar[str] = ""  # dialect-specific helper functions, after the common ones

    def prelude(self) -> str:
        subst = {"{as_uint}": self.as_uint, "{as_float}": self.as_float, "{inline}": self.inline}
        common = _COMMON_C
        for k, v in subst.items():
            common = common.replace(k, v)
        return self._prelude_head() + common + self.extra_c

    def _prelude_head(self) -> str:
        raise NotImplementedError

    def constant_array(self, name: str, values: tuple[float, ...]) -> str:
        """A float32 table as exact hex literals, four a line, each line's decimal values in a comment."""
        from .cexpr import f32_literal

        lines = []
        for i in range(0, len(values), 4):
            row = values[i : i + 4]
            lits = ", ".join(f32_literal(v) for v in row) + ("," if i + 4 < len(values) else "")
            lines.append(f"    {lits:<{self._table_width(values)}} /* {' '.join(f'{v:.9g}' for v in row)} */")
        return f"{self.constant_qual} float {name}[{len(values)}] = {{\n" + "\n".join(lines) + "\n};"

    @staticmethod
    def _table_width(values: tuple[float, ...]) -> int:
        from .cexpr import f32_literal

        return max(len(", ".join(f32_literal(v) for v in values[i : i + 4])) + 1 for i in range(0, len(values), 4))

    locals_as_params: ClassVar[bool] = False  # local arrays arrive as kernel arguments (SYCL)

    def kernel(self, name: str, args: tuple, wg: int, dims: int = 1, subgroup: int | None = None) -> str:
        """The kernel's signature from its Args (kernels.source.Arg): buffers as pointers, scalars by
        value, local arrays as arguments only where the dialect passes them so (SYCL)."""
        params = []
        for a in args:
            if a.is_buffer:
                params.append(self.ptr(a.ctype, a.name, const=a.kind == "in"))
            elif a.kind == "scalar":
                params.append(self.scalar(a.ctype, a.name))
            elif self.locals_as_params:
                params.append(self.local_param(a.ctype, a.name))
        return f"{self.kernel_prefix}{self._attrs(wg, dims, subgroup)}void {name}({', '.join(params)})"

    def local_param(self, ctype: str, name: str) -> str:
        raise NotImplementedError

    def _attrs(self, wg: int, dims: int, subgroup: int | None) -> str:
        return ""

    def kernel_entry(self, args: tuple = (), dims: int = 1) -> str:
        """Statements every kernel body starts with: local arrays, and SYCL's nd_item."""
        return "\n".join(f"{self.local_qual} {a.ctype} {a.name}[{a.count}];" for a in args if a.kind == "local")

    def ptr(self, ctype: str, name: str, const: bool = False) -> str:
        c = "const " if const else ""
        return f"{self.global_qual}{c}{ctype}* {self.restrict}{name}".replace("  ", " ")

    def scalar(self, ctype: str, name: str) -> str:
        return f"const {ctype} {name}"

    def gptr_cast(self, ctype: str, expr: str, const: bool = True) -> str:
        c = "const " if const else ""
        return f"(({self.global_qual}{c}{ctype}*)({expr}))"

    # ---- indices, barriers, memory ----
    def gid(self, dim: int = 0) -> str:
        return self.ids["gid"].format(d=dim, x="xyz"[dim])

    def lid(self, dim: int = 0) -> str:
        return self.ids["lid"].format(d=dim, x="xyz"[dim])

    def group(self, dim: int = 0) -> str:
        return self.ids["group"].format(d=dim, x="xyz"[dim])

    def lsize(self, dim: int = 0) -> str:
        return self.ids["lsize"].format(d=dim, x="xyz"[dim])

    def barrier(self) -> str:
        return self.barrier_stmt

    # ---- numbers ----
    def mul_rn(self, a: str, b: str) -> str:
        """a*b rounded on its own: never contracted into an fma with a following add."""
        return f"({a} * {b})"

    def add_rn(self, a: str, b: str) -> str:
        return f"({a} + {b})"

    def div_rn(self, a: str, b: str) -> str:
        """a/b correctly rounded. Plain C division is that on CUDA (nvcc -prec-div, the default) and
        SYCL; OpenCL C allows 2.5 ulp unless the program is built with
        -cl-fp32-correctly-rounded-divide-sqrt, which the OpenCL backend must pass."""
        return f"({a} / {b})"

    def load_half(self, byte_ptr: str) -> str:
        """A float from the IEEE half at byte_ptr (2-byte aligned, global memory)."""
        raise NotImplementedError

    def f32_to_f16_bits(self, x: str) -> str:
        raise NotImplementedError

    def to_storage(self, dtype: str, x: str) -> str:
        """The stored form of f32 value x for an output dtype, correctly rounded."""
        if dtype == "f32":
            return x
        if dtype == "bf16":
            return f"qk_f32_to_bf16({x})"
        return self.f32_to_f16_bits(x)

    # ---- vector memory access ----
    def vec(self, ctype: str, n: int) -> str:
        return f"{ctype}{n}"

    def vget(self, var: str, i: int) -> str:
        return f"{var}.{'xyzw'[i]}"

    def load_u32(self, dst: str, src: str, nbytes: int, align: int) -> str:
        """Statements that fill uint dst[nbytes/4] from the global bytes at src (little-endian),
        with the widest loads that `align` (a power of two dividing src's address) allows."""
        assert nbytes % 4 == 0, nbytes
        nw = nbytes // 4
        lines = []
        if align >= 16 and nw % 4 == 0:
            v = self.vec("uint", 4)
            for k in range(nw // 4):
                lines.append(f"{{ {v} t = {self.gptr_cast(v, src)}[{k}]; "
                             + " ".join(f"{dst}[{4 * k + i}] = {self.vget('t', i)};" for i in range(4)) + " }")  # fmt: skip
        elif align >= 8 and nw % 2 == 0:
            v = self.vec("uint", 2)
            for k in range(nw // 2):
                lines.append(f"{{ {v} t = {self.gptr_cast(v, src)}[{k}]; "
                             f"{dst}[{2 * k}] = {self.vget('t', 0)}; {dst}[{2 * k + 1}] = {self.vget('t', 1)}; }}")  # fmt: skip
        elif align >= 4:
            lines += [f"{dst}[{k}] = {self.gptr_cast('uint', src)}[{k}];" for k in range(nw)]
        elif align == 2:
            # 2-byte aligned blocks (q4_0, q5_0, q8_0): two 16-bit loads per word, never 4-byte ones.
            p = self.gptr_cast("ushort", src)
            lines += [f"{dst}[{k}] = (uint){p}[{2 * k}] | ((uint){p}[{2 * k + 1}] << 16);" for k in range(nw)]
        else:
            p = self.gptr_cast("uchar", src)
            lines += [f"{dst}[{k}] = (uint){p}[{4 * k}] | ((uint){p}[{4 * k + 1}] << 8) | "
                      f"((uint){p}[{4 * k + 2}] << 16) | ((uint){p}[{4 * k + 3}] << 24);" for k in range(nw)]  # fmt: skip
        return "\n".join(lines)

    def store_out(self, dtype: str, out: str, index: str, vals: str, count: int) -> str:
        """Statements that store float vals[0..count) to out[index..index+count), rounded to dtype,
        in 16-byte pieces (index must be a multiple of the piece)."""
        storage = dtypes.get(dtype).ctype
        per = 16 // (4 if storage == "float" else 2)
        if count % per:
            per = count
        lines = []
        for k in range(0, count, per):
            if storage == "float" and per == 4:
                v = self.vec("float", 4)
                items = ", ".join(f"{vals}[{k + i}]" for i in range(4))
                lines.append(f"{self.gptr_cast(v, out, const=False)}[({index} + {k}) / 4] = {self.make_vec(v, items)};")
            elif storage == "ushort" and per == 8:
                v = self.vec("uint", 4)
                words = ", ".join(
                    f"(uint){self.to_storage(dtype, f'{vals}[{k + 2 * i}]')} | "
                    f"((uint){self.to_storage(dtype, f'{vals}[{k + 2 * i + 1}]')} << 16)"
                    for i in range(4)
                )
                lines.append(f"{self.gptr_cast(v, out, const=False)}[({index} + {k}) / 8] = {self.make_vec(v, words)};")
            else:
                lines += [f"{out}[{index} + {k + i}] = {self.to_storage(dtype, f'{vals}[{k + i}]')};" for i in range(per)]
        return "\n".join(lines)

    def make_vec(self, vtype: str, items: str) -> str:
        return f"({vtype})({items})"

    def half_bits_to_f32(self, h: str) -> str:
        """A float from IEEE half bits held in a register."""
        raise NotImplementedError

    def word_elem(self, dtype: str, words: str, i: str) -> str:
        """Element i (f32) of an activation chunk loaded as uint words, stored as dtype."""
        if dtype == "f32":
            return f"{self.as_float}({words}[{i}])"
        half = f"(ushort)({words}[({i}) / 2u] >> (16u * (({i}) % 2u)))"
        return f"qk_bf16_to_f32({half})" if dtype == "bf16" else self.half_bits_to_f32(half)

    def fast_code(self, v: str, bias: int) -> str:
        """v - bias for an integer code v < 1024, without an int -> float conversion: the half with
        bits 0x6400 | v is 1024 + v, minus the half 1024 + bias (exact for |result| <= 2048).
        Devices without fp16 arithmetic use the same trick in f32 (0x4B000000 | v is 2^23 + v)."""
        return f"({self.as_float}(0x4B000000u | ({v})) - {float(2**23 + bias)!r}f)"

    # ---- sub-groups ----
    def sg_lane(self) -> str:
        """This work-item's lane in its sub-group (tests check lanes are consecutive work-items,
        the layout the GEMV templates' `lid % lanes` relies on)."""
        raise NotImplementedError

    def subgroup_sum(self, x: str) -> str:
        raise NotImplementedError

    def lanes_sum(self, var: str, scratch: str, lid: str, lanes: int) -> str:
        """Statements leaving in `var` of lane 0 of each `lanes`-wide row the row's sum. Every
        work-item must reach them (the fallback has barriers). Sub-groups where the device has
        them; otherwise a tree in local memory (`scratch`, one float per work-item)."""
        if self.subgroups:
            return f"{var} = {self.subgroup_sum(var)};"
        return (
            f"{scratch}[{lid}] = {var};\n{self.barrier_stmt}\n"
            f"for (uint s = {lanes // 2}u; s > 0u; s >>= 1) {{\n"
            f"    if ({lid} % {lanes}u < s) {scratch}[{lid}] += {scratch}[{lid} + s];\n"
            f"    {self.barrier_stmt}\n}}\n"
            f"{var} = {scratch}[{lid}];\n{self.barrier_stmt}"
        )

    def dot4_i8(self, a: str, b: str, acc: str) -> str:
        """acc + dot of the four signed bytes of uint a and uint b (portable form)."""
        terms = " + ".join(
            f"(int)(char)(({a} >> {8 * i}) & 0xffu) * (int)(char)(({b} >> {8 * i}) & 0xffu)" for i in range(4)
        )
        return f"({acc} + {terms})"


@dataclass(frozen=True)
class OpenCLDialect(Dialect):
    name: ClassVar[str] = "opencl"
    lang: ClassVar[str] = "OpenCL C"
    suffix: ClassVar[str] = ".cl"
    kernel_prefix: ClassVar[str] = "__kernel "
    global_qual: ClassVar[str] = "__global "
    restrict: ClassVar[str] = "restrict "
    local_qual: ClassVar[str] = "__local"
    constant_qual: ClassVar[str] = "__constant"
    barrier_stmt: ClassVar[str] = "barrier(CLK_LOCAL_MEM_FENCE);"
    ids: ClassVar[dict[str, str]] = {"gid": "(uint)get_global_id({d})", "lid": "(uint)get_local_id({d})",
                                     "group": "(uint)get_group_id({d})", "lsize": "(uint)get_local_size({d})"}  # fmt: skip
    as_uint: ClassVar[str] = "as_uint"
    as_float: ClassVar[str] = "as_float"
    inline: ClassVar[str] = "inline"
    # f32 -> f16 bits through vstore_half_rte into private memory: core OpenCL C 1.2, round to
    # nearest even, no cl_khr_fp16 needed.
    extra_c: ClassVar[str] = (
        "inline ushort qk_f32_to_f16(float f) { ushort h; vstore_half_rte(f, 0, (__private half*)&h); return h; }\n"
        "inline float qk_f16_to_f32(ushort h) { return vload_half(0, (__private const half*)&h); }\n"
    )

    def _prelude_head(self) -> str:
        return "#pragma OPENCL FP_CONTRACT OFF\n"

    def _attrs(self, wg: int, dims: int, subgroup: int | None) -> str:
        attrs = f"__attribute__((reqd_work_group_size({wg}, 1, 1))) "
        if subgroup and self.subgroups:
            attrs += f"__attribute__((intel_reqd_sub_group_size({subgroup}))) "
        return attrs

    def vget(self, var: str, i: int) -> str:
        return f"{var}.s{i:x}"

    def load_half(self, byte_ptr: str) -> str:
        # vload_half is core OpenCL C 1.2: it needs no cl_khr_fp16 (NVIDIA, pocl have none).
        return f"vload_half(0, (__global const half*)({byte_ptr}))"

    def f32_to_f16_bits(self, x: str) -> str:
        return f"qk_f32_to_f16({x})"

    def half_bits_to_f32(self, h: str) -> str:
        return f"qk_f16_to_f32({h})"

    def fast_code(self, v: str, bias: int) -> str:
        if not self.fp16:
            return super().fast_code(v, bias)
        return f"(float)(as_half((ushort)(0x6400u | ({v}))) - as_half((ushort){_half_bits(1024 + bias)}u))"

    def prelude(self) -> str:
        fp16 = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if self.fp16 else ""
        return fp16 + super().prelude()

    def sg_lane(self) -> str:
        return "(uint)get_sub_group_local_id()"

    def subgroup_sum(self, x: str) -> str:
        return f"sub_group_reduce_add({x})"

    def dot4_i8(self, a: str, b: str, acc: str) -> str:
        # cl_khr_integer_dot_product's 4x8-bit packed form: no pragma needed (checked on Intel's CPU runtime)
        if not self.dot4:
            return super().dot4_i8(a, b, acc)
        return f"({acc} + dot_4x8packed_ss_int({a}, {b}))"


@dataclass(frozen=True)
class CUDADialect(Dialect):
    name: ClassVar[str] = "cuda"
    lang: ClassVar[str] = "CUDA C++"
    suffix: ClassVar[str] = ".cu"
    kernel_prefix: ClassVar[str] = 'extern "C" __global__ '
    global_qual: ClassVar[str] = ""
    restrict: ClassVar[str] = "__restrict__ "
    local_qual: ClassVar[str] = "__shared__"
    constant_qual: ClassVar[str] = "__constant__"
    # Not static: nvcc warns (#177) about unused static helpers; inline functions need no static.
    inline: ClassVar[str] = "__device__ __forceinline__"
    barrier_stmt: ClassVar[str] = "__syncthreads();"
    ids: ClassVar[dict[str, str]] = {"gid": "(blockIdx.{x} * blockDim.{x} + threadIdx.{x})", "lid": "threadIdx.{x}",
                                     "group": "blockIdx.{x}", "lsize": "blockDim.{x}"}  # fmt: skip
    as_uint: ClassVar[str] = "__float_as_uint"
    as_float: ClassVar[str] = "__uint_as_float"

    def _prelude_head(self) -> str:
        return (
            "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
            "typedef unsigned char uchar;\ntypedef unsigned short ushort;\ntypedef unsigned int uint;\n"
        )

    extra_c: ClassVar[str] = (
        "__device__ __forceinline__ float qk_warp_sum(float x) {\n"
        "    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);\n"
        "    return x;\n}\n"
    )

    def _attrs(self, wg: int, dims: int, subgroup: int | None) -> str:
        return f"__launch_bounds__({wg}) "

    def mul_rn(self, a: str, b: str) -> str:
        return f"__fmul_rn({a}, {b})"

    def add_rn(self, a: str, b: str) -> str:
        return f"__fadd_rn({a}, {b})"

    def div_rn(self, a: str, b: str) -> str:
        return f"__fdiv_rn({a}, {b})"

    def load_half(self, byte_ptr: str) -> str:
        return f"__half2float(*(const __half*)({byte_ptr}))"

    def f32_to_f16_bits(self, x: str) -> str:
        return f"__half_as_ushort(__float2half_rn({x}))"

    def to_storage(self, dtype: str, x: str) -> str:
        if dtype == "bf16":  # native conversion, round to nearest even
            return f"__bfloat16_as_ushort(__float2bfloat16_rn({x}))"
        return super().to_storage(dtype, x)

    def make_vec(self, vtype: str, items: str) -> str:
        return f"make_{vtype}({items})"

    def half_bits_to_f32(self, h: str) -> str:
        return f"__half2float(__ushort_as_half({h}))"

    def fast_code(self, v: str, bias: int) -> str:
        return (f"__half2float(__hsub(__ushort_as_half((ushort)(0x6400u | ({v}))), "
                f"__ushort_as_half((ushort){_half_bits(1024 + bias)}u)))")  # fmt: skip

    def sg_lane(self) -> str:
        return "(threadIdx.x & 31u)"

    def subgroup_sum(self, x: str) -> str:
        return f"qk_warp_sum({x})"

    def dot4_i8(self, a: str, b: str, acc: str) -> str:
        return f"__dp4a((int)({a}), (int)({b}), {acc})"


@dataclass(frozen=True)
class SYCLDialect(Dialect):
    name: ClassVar[str] = "sycl"
    lang: ClassVar[str] = "SYCL C++"
    suffix: ClassVar[str] = ".cpp"
    kernel_prefix: ClassVar[str] = 'extern "C" '
    global_qual: ClassVar[str] = ""
    restrict: ClassVar[str] = "__restrict "
    local_qual: ClassVar[str] = ""
    constant_qual: ClassVar[str] = "static constexpr"
    inline: ClassVar[str] = "static inline"
    barrier_stmt: ClassVar[str] = "sycl::group_barrier(qk_item.get_group());"
    ids: ClassVar[dict[str, str]] = {"gid": "(uint)qk_item.get_global_id({d})", "lid": "(uint)qk_item.get_local_id({d})",
                                     "group": "(uint)qk_item.get_group({d})", "lsize": "(uint)qk_item.get_local_range({d})"}  # fmt: skip
    as_uint: ClassVar[str] = "sycl::bit_cast<uint>"
    as_float: ClassVar[str] = "sycl::bit_cast<float>"

    def _prelude_head(self) -> str:
        return (
            "#include <sycl/sycl.hpp>\n"
            "namespace syclexp = sycl::ext::oneapi::experimental;\n"
            "typedef unsigned char uchar;\ntypedef unsigned short ushort;\ntypedef unsigned int uint;\n"
            "#pragma clang fp contract(off)\n"
        )

    def _attrs(self, wg: int, dims: int, subgroup: int | None) -> str:
        # The required sub-group size sits on the kernel itself, never on a lambda.
        props = [f"syclexp::nd_range_kernel<{dims}>"]
        if subgroup and self.subgroups:
            props.append(f"syclexp::sub_group_size<{subgroup}>")
        return "".join(f"SYCL_EXT_ONEAPI_FUNCTION_PROPERTY(({p})) " for p in props)

    # In-kernel local allocation (group_local_memory, scratch memory) crashes this DPC++'s
    # run-time compiler; work_group_memory kernel arguments work.
    locals_as_params: ClassVar[bool] = True

    def local_param(self, ctype: str, name: str) -> str:
        return f"syclexp::work_group_memory<{ctype}[]> {name}"

    def kernel_entry(self, args: tuple = (), dims: int = 1) -> str:
        return f"const auto qk_item = sycl::ext::oneapi::this_work_item::get_nd_item<{dims}>();"

    def vec(self, ctype: str, n: int) -> str:
        return f"sycl::vec<{ctype}, {n}>"

    def vget(self, var: str, i: int) -> str:
        return f"{var}[{i}]"

    def make_vec(self, vtype: str, items: str) -> str:
        return f"{vtype}({items})"

    def load_half(self, byte_ptr: str) -> str:
        return f"(float)(*(const sycl::half*)({byte_ptr}))"

    def f32_to_f16_bits(self, x: str) -> str:
        return f"sycl::bit_cast<ushort>(sycl::half({x}))"

    def half_bits_to_f32(self, h: str) -> str:
        return f"(float)sycl::bit_cast<sycl::half>((ushort)({h}))"

    def fast_code(self, v: str, bias: int) -> str:
        return (f"(float)(sycl::bit_cast<sycl::half>((ushort)(0x6400u | ({v}))) - "
                f"sycl::bit_cast<sycl::half>((ushort){_half_bits(1024 + bias)}u))")  # fmt: skip

    def sg_lane(self) -> str:
        return "(uint)qk_item.get_sub_group().get_local_linear_id()"

    def subgroup_sum(self, x: str) -> str:
        return f"sycl::reduce_over_group(qk_item.get_sub_group(), {x}, sycl::plus<float>())"


def _half_bits(v: float) -> int:
    import numpy as np

    return int(np.array(v, dtype=np.float16).view(np.uint16))


DIALECTS: dict[str, type[Dialect]] = {"opencl": OpenCLDialect, "cuda": CUDADialect, "sycl": SYCLDialect}
assert tuple(sorted(DIALECTS)) == tuple(sorted(BACKENDS))


def dialect_class(backend: str) -> type[Dialect]:
    from ..errors import QKGenValueError

    try:
        return DIALECTS[backend]
    except (KeyError, TypeError):
        raise QKGenValueError(f"backend: unknown backend {backend!r}; allowed: {', '.join(DIALECTS)}") from None


def dialect(target: Target | str) -> Dialect:
    """The dialect of a target's backend, rendering for that target (a Target, profile or backend name)."""
    t = get_target(target)
    return dialect_class(t.backend)(t)
