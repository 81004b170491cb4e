"""SYCL 2020 C++ for DPC++'s run-time compiler: free-function kernels with properties, sub-groups
through the nd_item, local memory as work_group_memory kernel arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..cexpr import paren
from .base import Dialect

_HELPERS = {
    "qk_f32_to_f16": """\
/* f32 -> f16 bits, round to nearest even */
static inline ushort qk_f32_to_f16(float f) { return sycl::bit_cast<ushort>(sycl::half(f)); }""",
    "qk_f16_to_f32": """\
/* f16 bits -> f32, exact */
static inline float qk_f16_to_f32(ushort h) { return (float)sycl::bit_cast<sycl::half>(h); }""",
    "qk_half": """\
/* the half with these bits */
static inline sycl::half qk_half(uint bits) { return sycl::bit_cast<sycl::half>((ushort)bits); }""",
    "qk_hfma2": """\
/* the f16 pair a * b + c, each half rounded once */
static inline uint qk_hfma2(uint a, uint b, uint c) {
    using h2 = sycl::vec<sycl::half, 2>;
    return sycl::bit_cast<uint>(sycl::fma(sycl::bit_cast<h2>(a), sycl::bit_cast<h2>(b), sycl::bit_cast<h2>(c)));
}""",
}


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
                                     "group": "(uint)qk_item.get_group({d})", "lsize": "(uint)qk_item.get_local_range({d})",
                                     "gid_wide": "qk_item.get_global_id({d})"}  # fmt: skip
    as_uint: ClassVar[str] = "sycl::bit_cast<uint>"
    as_float: ClassVar[str] = "sycl::bit_cast<float>"
    fmax: ClassVar[str] = "sycl::fmax"
    fabs: ClassVar[str] = "sycl::fabs"
    fmin: ClassVar[str] = "sycl::fmin"
    type_names: ClassVar[dict[str, str]] = {"long": "long long"}

    def helpers(self) -> dict[str, str]:
        return {**super().helpers(), **_HELPERS}

    def prelude_head(self, text: str | None) -> str:
        return "\n".join([
            "#include <sycl/sycl.hpp>",
            "namespace syclexp = sycl::ext::oneapi::experimental;",
            *self._typedefs(text),
            "#pragma clang fp contract(off)",
        ])  # fmt: skip

    def _attrs(self, wg: int, dims: int, subgroup: int | None, min_groups: int = 0) -> list[str]:
        # The required sub-group size sits on the kernel itself, never on a lambda.
        props = [f"syclexp::nd_range_kernel<{dims}>"]
        if subgroup and self.subgroups:
            props.append(f"syclexp::sub_group_size<{subgroup}>")
        return [f"SYCL_EXT_ONEAPI_FUNCTION_PROPERTY(({p}))" for p in props]

    # In-kernel local allocation (group_local_memory, scratch memory) crashes this DPC++'s
    # run-time compiler; work_group_memory kernel arguments work.
    locals_as_params: ClassVar[bool] = True
    # work_group_memory has no pointer conversion of its own; its first element's address is one.
    # Its alignment is the runtime's (a local-memory kernel argument): vector access is run on
    # Intel's CPU device only so far.
    local_addr: ClassVar[str] = "&{arr}[0]"

    def local_param(self, ctype: str, name: str) -> str:
        return f"syclexp::work_group_memory<{self.ctype(ctype)}[]> {name}"

    def kernel_entry(self, args: tuple = (), dims: int = 1) -> str:
        return f"const auto qk_item = sycl::ext::oneapi::this_work_item::get_nd_item<{dims}>();"

    def vec(self, ctype: str, n: int) -> str:
        # SYCL 2020's aliases (sycl::uint4 is sycl::vec<uint32_t, 4>)
        return f"sycl::{ctype}{n}"

    def vget(self, var: str, i: int) -> str:
        return f"{var}[{i}]"

    def make_vec(self, vtype: str, items: str) -> str:
        return f"{vtype}({items})"

    def load_half(self, byte_ptr: str) -> str:
        return f"(float)(*(const sycl::half*){paren(byte_ptr)})"

    def fast_f16(self) -> bool:
        return True  # sycl::half arithmetic works on every device (emulated where not native)

    def sg_lane(self) -> str:
        return "(uint)qk_item.get_sub_group().get_local_linear_id()"

    def subgroup_sum(self, x: str) -> str:
        return f"sycl::reduce_over_group(qk_item.get_sub_group(), {x}, sycl::plus<float>())"

    def acc_rn(self, acc: str, term: str) -> str:
        # fma(term, 1, acc) is acc + term with one rounding, as the plain sum. Intel's CPU OpenCL
        # runtime, given DPC++'s SPIR-V (sequential fadds, ContractionOff), splits loop-carried float
        # sums into 8 partial sums in the scalar code it runs for the work-items after the last full
        # 16-wide vector; an fma chain it leaves in order. -ffp-model and -ffp-contract change nothing
        # there; only the backend's -cl-opt-disable (DPC++ -O0) does.
        return f"sycl::fma({term}, 1.0f, {acc})"

    def subgroup_max(self, x: str) -> str:
        return f"sycl::reduce_over_group(qk_item.get_sub_group(), {x}, sycl::maximum<float>())"

    def shuffle_xor(self, x: str, mask: str) -> str | None:
        return f"sycl::permute_group_by_xor(qk_item.get_sub_group(), {x}, {mask})"


DIALECT = SYCLDialect
