"""The Dialect base class: the C subset every template is written in, and the defaults a backend's
dialect overrides.

Kernel templates are written once in a C subset (uchar/ushort/uint/int, float arithmetic, for loops)
and call the dialect for everything else: the kernel qualifier and signature, work-item indices,
barriers, local and constant memory, half/bf16 loads and stores, vector loads, and sub-group
reduction with a local-memory fallback. A dialect is a small subclass holding strings and a few
functions, in the manner of tinygrad's renderer/cstyle.py.

A dialect instance carries the typed Target it renders for: the class holds spellings, the target
capabilities, so one class renders for every device of its backend. Rendering touches no device.

Helper functions (qk_*) and their prelude lines follow the body: `prelude(body)` emits only what it uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ... import dtypes
from ..cexpr import f32_decimal, f32_literal, paren
from ..target import Target
from .half2 import BF16_BITS_RZ, F16_BITS_RZ, HALF2, PAIR_COUNTS, PairArithmetic
from .int8 import DOT4_PORTABLE, LUT16X8_PORTABLE
from .lanes import LaneReductions
from .loads import WordMoves

MAX_COLUMNS = 120  # generated lines stay within this width

# Helpers written once in the C subset; {inline}, {as_uint} and {as_float} are the dialect's spellings.
_BF16_FROM_F32 = """\
/* f32 -> bf16 bits, round to nearest even, NaN kept quiet: the reference codec's round_to */
{inline} ushort qk_f32_to_bf16(float f) {
    const uint u = {as_uint}(f);
    /* NaN (magnitude above infinity, 0x7f800000): truncate and set the quiet bit 0x40 */
    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
    /* round to nearest even: add 0x7fff plus the lowest bit kept, then truncate */
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""
_BF16_TO_F32 = """\
/* bf16 bits -> f32, exact: a bf16 is the upper half of an f32 */
{inline} float qk_bf16_to_f32(ushort b) { return {as_float}((uint)b << 16); }"""
_HELPER_CALL = re.compile(r"\b(qk_\w+)\(")


def half_bits(v: float) -> int:
    """The IEEE half bit pattern of v."""
    import numpy as np

    return int(np.array(v, dtype=np.float16).view(np.uint16))


@dataclass(frozen=True)
class Dialect(PairArithmetic, WordMoves, LaneReductions):
    """Base dialect. Subclasses fill the class-level tables; instances carry device capabilities."""

    name: ClassVar[str]
    lang: ClassVar[str]  # what the source is, for file suffixes and headers
    suffix: ClassVar[str]
    kernel_prefix: ClassVar[str]
    global_qual: ClassVar[str]  # pointer qualifier of kernel buffer arguments
    restrict: ClassVar[str] = ""
    local_qual: ClassVar[str]
    constant_qual: ClassVar[str]
    table_qual: ClassVar[str | None] = None  # tables a warp's work-items read at different indices
    prefetch_l2: ClassVar[str | None] = None  # a statement asking L2 for the line at global byte pointer {ptr}
    inline: ClassVar[str] = "static inline"
    barrier_stmt: ClassVar[str]
    # gid, lid, group, lsize (32-bit), gid_wide (a size_t global id): format strings of {d} / {x}
    ids: ClassVar[dict[str, str]]
    as_uint: ClassVar[str]
    as_float: ClassVar[str]
    fmax: ClassVar[str]  # float max / min (IEEE 754 maxNum / minNum: a NaN operand gives the other)
    fabs: ClassVar[str]  # |x| of a float (a free operand modifier on most GPUs)
    fmin: ClassVar[str]

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
    def helpers(self) -> dict[str, str]:
        """Helper functions by name, each a C definition with its comment (prelude picks them)."""
        return {"qk_f32_to_bf16": self._spell(_BF16_FROM_F32), "qk_bf16_to_f32": self._spell(_BF16_TO_F32),
                "qk_dot4_i8": self._spell(DOT4_PORTABLE), "qk_lut16x8": self._spell(LUT16X8_PORTABLE),
                **{f"qk_h{op}2": self._spell(c) for op, c in HALF2.items()},
                **{name: self._spell(c) for name, c in PAIR_COUNTS.items()},
                "qk_f16_bits_rz": self._spell(F16_BITS_RZ), "qk_bf16_bits_rz": self._spell(BF16_BITS_RZ)}  # fmt: skip

    def _spell(self, c: str) -> str:
        return c.replace("{inline}", self.inline).replace("{as_uint}", self.as_uint).replace("{as_float}", self.as_float)

    def used_helpers(self, body: str | None) -> list[str]:
        """Definitions of the helpers `body` calls, directly or through other helpers, in the
        dialect's order (every helper when body is None)."""
        table = self.helpers()
        used: set[str] = set(table) if body is None else set()
        todo = [body] if body is not None else []
        while todo:
            for name in _HELPER_CALL.findall(todo.pop()):
                if name in table and name not in used:
                    used.add(name)
                    todo.append(table[name].split("{", 1)[-1])
        calls = {n: set(_HELPER_CALL.findall(table[n].split("{", 1)[-1])) & used - {n} for n in used}
        done: list[str] = []  # the dialect's order, but a helper after the helpers it calls
        while len(done) < len(used):
            done.append(next(n for n in table if n in used and n not in done and calls[n] <= set(done)))
        return [table[n] for n in done]

    def prelude(self, body: str | None = None) -> str:
        """Everything a kernel body needs before it: includes, pragmas, typedefs and the helpers it
        calls (all of them when body is None), sections apart by one blank line."""
        helpers = self.used_helpers(body)
        text = "\n".join([body or "", *helpers]) if body is not None else None
        head = self.prelude_head(text)
        return "\n\n".join(part for part in (head, *helpers) if part)

    def prelude_head(self, text: str | None) -> str:
        """Includes, pragmas and typedefs for code `text` (the body and its helpers; None: all)."""
        raise NotImplementedError

    @staticmethod
    def _typedefs(text: str | None) -> list[str]:
        """The C99 shorthands of the template subset that `text` uses (all when text is None)."""
        names = (("uchar", "unsigned char"), ("ushort", "unsigned short"), ("uint", "unsigned int"))
        return [f"typedef {full} {short};" for short, full in names if text is None or re.search(rf"\b{short}\b", text)]

    def constant_array(self, name: str, values: tuple[float, ...], qual: str | None = None) -> str:
        """A float32 table as exact hex literals, each line's decimal float32 values in a comment; as
        many a line (8, 4 or 2) as fit the column limit. qual: its qualifier (default constant_qual)."""
        lits = [f32_literal(v) for v in values]
        decs = [f32_decimal(v) for v in values]
        for per in (8, 4, 2, 1):
            rows = [range(i, min(i + per, len(values))) for i in range(0, len(values), per)]
            code = [", ".join(lits[j] for j in r) + ("," if r[-1] + 1 < len(values) else "") for r in rows]
            width = max(len(c) for c in code)
            lines = [f"    {c:<{width}} /* {' '.join(decs[j] for j in r)} */" for c, r in zip(code, rows)]
            if per == 1 or max(len(x) for x in lines) <= MAX_COLUMNS:
                break
        return f"{qual or self.constant_qual} float {name}[{len(values)}] = {{\n" + "\n".join(lines) + "\n};"

    locals_as_params: ClassVar[bool] = False  # local arrays arrive as kernel arguments (SYCL)

    def kernel(self, name: str, args: tuple, wg: int, dims: int = 1, subgroup: int | None = None,
               min_groups: int = 0) -> str:
        """The kernel's signature from its Args (kernels.source.Arg): the qualifier and each
        attribute on a line of its own, then one parameter a line. Buffers as pointers, scalars by
        value, local arrays as arguments only where the dialect passes them so (SYCL). min_groups:
        work-groups a compute unit should hold at once, where the dialect can ask the compiler (its
        register budget)."""
        params = []
        for a in args:
            if a.is_buffer:
                params.append(self.ptr(a.ctype, a.name, const=a.kind == "in"))
            elif a.kind == "scalar":
                params.append(self.scalar(a.ctype, a.name))
            elif self.locals_as_params:
                params.append(self.local_param(a.ctype, a.name))
        head = [self.kernel_prefix.strip(), *self._attrs(wg, dims, subgroup, min_groups)]
        return "\n".join(head) + f"\nvoid {name}(\n" + ",\n".join(f"    {p}" for p in params) + ")"

    def local_param(self, ctype: str, name: str) -> str:
        raise NotImplementedError

    def _attrs(self, wg: int, dims: int, subgroup: int | None, min_groups: int = 0) -> list[str]:
        return []

    def kernel_entry(self, args: tuple = (), dims: int = 1) -> str:
        """Statements every kernel body starts with: local arrays, and SYCL's nd_item."""
        return "\n".join(self.local_decl(a) for a in args if a.kind == "local")

    # A local array declared with an alignment (Arg.align): {qual} {ctype} {name} {count} {align}
    aligned_local: ClassVar[str] = "{qual} {ctype} {name}[{count}] __attribute__((aligned({align})));"
    # Local memory as vectors (local_view): the pointer type, and a local array's first element
    local_ptr: ClassVar[str] = "{vtype}*"
    local_addr: ClassVar[str] = "{arr}"

    def local_decl(self, a) -> str:
        """The declaration of local Arg a (kind "local") in the kernel body."""
        ctype = self.ctype(a.ctype)
        if a.align:
            return self.aligned_local.format(qual=self.local_qual, ctype=ctype, name=a.name, count=a.count,
                                             align=a.align)
        return f"{self.local_qual} {ctype} {a.name}[{a.count}];"

    def local_view(self, name: str, vtype: str, arr: str) -> str:
        """A declaration of pointer `name` that sees local array `arr` (aligned to vtype: Arg.align)
        as an array of vtype, for vector loads and stores of local memory."""
        p = self.local_ptr.format(vtype=vtype)
        return f"{p} {name} = ({p}){self.local_addr.format(arr=arr)};"

    # C types of the template subset this language spells otherwise: OpenCL C's `long` is 64 bits
    # everywhere, C++'s only on LP64 hosts (`long long` is 64 bits on Windows too)
    type_names: ClassVar[dict[str, str]] = {}

    def ctype(self, name: str) -> str:
        """This language's spelling of subset type `name` ("long": a signed 64-bit integer)."""
        return self.type_names.get(name, name)

    def ptr(self, ctype: str, name: str, const: bool = False) -> str:
        c = "const " if const else ""
        return f"{self.global_qual}{c}{self.ctype(ctype)}* {self.restrict}{name}".replace("  ", " ")

    def scalar(self, ctype: str, name: str) -> str:
        return f"const {self.ctype(ctype)} {name}"

    def gptr_cast(self, ctype: str, expr: str, const: bool = True) -> str:
        c = "const " if const else ""
        return f"(({self.global_qual}{c}{ctype}*){paren(expr)})"

    def local_as(self, ctype: str, arr: str) -> str:
        """Local array `arr` seen as a pointer to ctype."""
        p = self.local_ptr.format(vtype=ctype)
        return f"(({p}){self.local_addr.format(arr=arr)})"

    def lptr_cast(self, ctype: str, expr: str, const: bool = False) -> str:
        """expr (a pointer into local memory) as a pointer to ctype in local memory."""
        c = "const " if const else ""
        return f"(({self.local_ptr.format(vtype=c + ctype)}){paren(expr)})"

    # ---- indices, barriers, memory ----
    def gid(self, dim: int = 0) -> str:
        return self.ids["gid"].format(d=dim, x="xyz"[dim])

    def gid_wide(self, dim: int = 0) -> str:
        return self.ids["gid_wide"].format(d=dim, x="xyz"[dim])

    def lid(self, dim: int = 0) -> str:
        return self.ids["lid"].format(d=dim, x="xyz"[dim])

    def group(self, dim: int = 0) -> str:
        return self.ids["group"].format(d=dim, x="xyz"[dim])

    def lsize(self, dim: int = 0) -> str:
        return self.ids["lsize"].format(d=dim, x="xyz"[dim])

    def barrier(self) -> str:
        return self.barrier_stmt

    def warp_barrier(self) -> str:
        """A barrier for the 32 lanes of a warp sharing warp-private local memory: the work-group's
        here (every work-item must reach it as often), a warp's own where the target has warps."""
        return self.barrier_stmt

    # ---- numbers ----
    def mul_rn(self, a: str, b: str) -> str:
        """a*b rounded on its own: never contracted into an fma with a following add."""
        return f"({a} * {b})"

    def add_rn(self, a: str, b: str) -> str:
        return f"({a} + {b})"

    def acc_rn(self, acc: str, term: str) -> str:
        """acc + term rounded on its own, one step of a running sum that must keep its source order
        (a loop-carried sum is where an optimizer that reassociates would split it into partial sums)."""
        return self.add_rn(acc, term)

    def div_rn(self, a: str, b: str) -> str:
        """a/b correctly rounded. Plain C division is that on CUDA (nvcc -prec-div, the default) and
        SYCL; OpenCL C allows 2.5 ulp unless the program is built with
        -cl-fp32-correctly-rounded-divide-sqrt, which the OpenCL backend must pass."""
        return f"({a} / {b})"

    def load_half(self, byte_ptr: str) -> str:
        """A float from the IEEE half at byte_ptr (2-byte aligned, global memory)."""
        raise NotImplementedError

    def f32_to_f16_bits(self, x: str) -> str:
        """f32 -> f16 bits, round to nearest even (every dialect has the helper)."""
        return f"qk_f32_to_f16({x})"

    def half_bits_to_f32(self, h: str) -> str:
        """A float from IEEE half bits held in a register (every dialect has the helper)."""
        return f"qk_f16_to_f32({h})"

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

    def funnel_r(self, lo: str, hi: str, shift: str) -> str:
        """Bits shift .. shift + 31 of the 64-bit hi:lo, shift in 0..31 (0: lo)."""
        return f"({shift} ? ({lo} >> {shift}) | ({hi} << (32u - {shift})) : {lo})"

    def store_out(self, dtype: str, out: str, index: str, vals: str, count: int) -> str:
        """Statements that store float vals[0..count) to out[index..index+count), rounded to dtype,
        in 16-byte pieces (index must be a multiple of the piece); 16-bit values are paired into
        words through named temporaries (pair0, ...)."""
        storage = dtypes.get(dtype).ctype
        per = 16 // (4 if storage == "float" else 2)
        if count % per:
            per = count
        base = f"{out} + {index}"
        lines = []
        for k in range(0, count, per):
            if storage == "float" and per == 4:
                v = self.vec("float", 4)
                items = ", ".join(f"{vals}[{k + i}]" for i in range(4))
                lines.append(f"{self.gptr_cast(v, base, const=False)}[{k // 4}] = {self.make_vec(v, items)};")
            elif storage == "ushort" and per == 8:
                v = self.vec("uint", 4)
                pairs = [f"pair{k // 2 + i}" for i in range(4)]
                if k == 0:
                    lines.append("/* two 16-bit values a word, the first in the low half (little-endian) */")
                for i, pair in enumerate(pairs):
                    lo = self.to_storage(dtype, f"{vals}[{k + 2 * i}]")
                    hi = self.to_storage(dtype, f"{vals}[{k + 2 * i + 1}]")
                    lines.append(f"const uint {pair} = (uint){lo} | ((uint){hi} << 16);")
                lines.append(f"{self.gptr_cast(v, base, const=False)}[{k // 8}] = {self.make_vec(v, ', '.join(pairs))};")
            else:
                lines += [f"{out}[{index}{f' + {k + i}' if k + i else ''}] = {self.to_storage(dtype, f'{vals}[{k + i}]')};"
                          for i in range(per)]  # fmt: skip
        return "\n".join(lines)

    def make_vec(self, vtype: str, items: str) -> str:
        return f"({vtype})({items})"

    def word_elem(self, dtype: str, words: str, i: str) -> str:
        """Element i (f32) of an activation chunk loaded as uint words, stored as dtype."""
        i = paren(i)
        if dtype == "f32":
            return f"{self.as_float}({words}[{i}])"
        half = f"(ushort)({words}[{i} / 2u] >> (16u * ({i} % 2u)))"
        return self.bits16_to_f32(dtype, half)

    # ---- the fast int -> float decode ----
    def fast_code(self, v: str, bias: int) -> str:
        """v - bias for an integer code v < 1024, without an int -> float conversion: the half with
        bits 0x6400 | v is 1024 + v, minus the half 1024 + bias (exact for |result| <= 2048).
        Devices without fp16 arithmetic use the same trick in f32 (0x4B000000 | v is 2^23 + v)."""
        if not self.fast_f16():
            return f"({self.as_float}(0x4B000000u | {paren(v)}) - {float(2**23 + bias)!r}f)"
        return self._fast_code_f16(paren(v), f"0x{half_bits(1024 + bias):04x}u")

    def fast_f16(self) -> bool:
        """Whether fast_code works in half arithmetic (else in f32)."""
        return self.fp16

    def _fast_code_f16(self, bits: str, bias_bits: str) -> str:
        """The f32 value of half(0x6400u | bits) - half(bias_bits)."""
        return f"(float)(qk_half(0x6400u | {bits}) - qk_half({bias_bits}))"

    def fast_code_note(self, bias: int) -> str:
        """One line of comment on fast_code, for the line above it."""
        plus, minus = (f" + {bias}", f" - {bias}") if bias else ("", "")
        if not self.fast_f16():
            return f"/* float bits 0x4B000000 | c are 2^23 + c: minus 2^23{plus} is c{minus}, exact, no cvt */"
        bits = f"0x{half_bits(1024 + bias):04x}"
        return f"/* half bits 0x6400 | c are 1024 + c: minus 1024{plus} ({bits}) is c{minus}, exact, no cvt */"

    # ---- sub-groups ----
    def sg_lane(self) -> str:
        """This work-item's lane in its sub-group (tests check lanes are consecutive work-items,
        the layout the GEMV templates' `lid % lanes` relies on)."""
        raise NotImplementedError

    def dot4_i8(self, a: str, b: str, acc: str) -> str:
        """acc + dot of the four signed bytes of uint a and uint b (portable form: a helper)."""
        return f"qk_dot4_i8({a}, {b}, {acc})"

    def lut16x8(self, w: str, table: list[str], lo: str, hi: str) -> str:
        """The statement that looks up the eight 4-bit codes of uint w in the 16-byte table held in
        four uint words (`table`, C literals; entry e is byte e % 4 of word e / 4): uint lo gets the
        entries of the bytes' low nibbles, hi those of their high nibbles, one byte each."""
        return f"qk_lut16x8({w}, {', '.join(table)}, &{lo}, &{hi});"

    def pack_x2(self, dtype: str, lo: str, hi: str) -> str:
        """uint bits of the f16 or bf16 pair (lo, hi), each rounded to nearest even, lo in bits 0-15."""
        return f"((uint){self.to_storage(dtype, lo)} | ((uint){self.to_storage(dtype, hi)} << 16))"

    def bits16_to_f32(self, dtype: str, h: str) -> str:
        """A float from f16 or bf16 bits held in a register."""
        return f"qk_bf16_to_f32({h})" if dtype == "bf16" else self.half_bits_to_f32(h)
