"""One format row: the facts of a quantized format, and the rule for where each code sits.

Element numbering: a tensor is quantized over its flattened elements, in blocks of `block`
consecutive elements. `locate()` is the one statement of where an element's code is stored; the
reference codec, the kernel templates (through symbolic indices) and the int8-dot context all
call it. Every field of a row is checked by type and allowed value when the row is made, so
nothing a row holds can reach generated C except as the number or identifier it claims to be.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import FormatError

# Field types of inline (GGUF-style) block structs: name -> (bytes, numpy dtype).
FIELD_TYPES = MappingProxyType({"f16": (2, "<f2"), "f32": (4, "<f4"), "u8": (1, "u1"), "i8": (1, "i1"),
                                "i16": (2, "<i2")})  # fmt: skip

# What a code means before scaling ("code" field of a row).
CODE_KINDS = ("table", "unsigned", "signed")
# How the scaled value is formed ("scale" field of a row):
#   absmax: table[q] * absmax[block]            (bitsandbytes, statistics in separate arrays)
#   d:      (q*step - zero) * d                 (GGUF, d inside the block)
#   d_m:    q * d + m                           (GGUF, d and m inside the block)
#   scale:  (q*step - zero) * scale[...]        (plain integers, scales in a separate array)
SCALE_KINDS = ("absmax", "d", "d_m", "scale")
PACKS = ("interleaved", "split")
SCALE_MODES = ("tensor", "row", "group")
# How the per-sub-block scales in a row's `scales_field` are stored (GGUF K-quants, FP4):
#   k4:      8 sub-blocks, a 6-bit scale and a 6-bit min each, packed in 12 bytes; times d / dmin
#   k3:      16 sub-blocks, a 6-bit scale each (stored + 32), packed in 12 bytes; times d
#   nibbles: a byte per sub-block, the scale in its low 4 bits, the min in its high 4; times d / dmin
#   i8:      a signed byte per sub-block; times d
#   e8m0_half:  a byte per sub-block, the scale itself: 2^(e - 128) (half the OCP E8M0 value)
#   ue4m3_half: a byte per sub-block, the scale itself: half the unsigned E4M3 value (0x7F: 0)
SUB_SCALE_KINDS = ("k4", "k3", "nibbles", "i8", "e8m0_half", "ue4m3_half")
SUB_SCALES_WITH_MIN = ("k4", "nibbles")
SUB_SCALES_TIMES_D = ("k4", "k3", "nibbles", "i8")


def _identifier(v: Any) -> bool:
    return isinstance(v, str) and v.isidentifier() and v.isascii()


def _int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _text(v: Any) -> bool:
    """One printable line that cannot end the C comment it is written into."""
    return isinstance(v, str) and v.isprintable() and "*/" not in v and "/*" not in v


def _f32_tuple(v: Any) -> bool:
    return isinstance(v, tuple) and all(
        isinstance(x, float) and math.isfinite(x) and float(np.float32(x)) == x for x in v
    )


@dataclass(frozen=True)
class Field:
    """One member of an inline block struct, as in ggml-common.h."""

    name: str
    ctype: str
    count: int = 1

    def __post_init__(self) -> None:
        if not _identifier(self.name):
            raise FormatError(f"field name: {self.name!r} must be an identifier")
        if self.ctype not in FIELD_TYPES:
            raise FormatError(f"field {self.name!r}: ctype {self.ctype!r}; allowed: {', '.join(FIELD_TYPES)}")
        if not _int(self.count) or not 1 <= self.count <= 4096:
            raise FormatError(f"field {self.name!r}: count {self.count!r} must be an int in 1..4096")

    @property
    def nbytes(self) -> int:
        return FIELD_TYPES[self.ctype][0] * self.count


@dataclass(frozen=True)
class Plane:
    """`bits` bits of every code, stored from bit `shift` of the code, in inline field `field` (None:
    the separate `data` array). Split packing: in each unit of `unit` elements, byte r of the unit's
    run of unit // per_byte bytes holds elements r, r + run, ... (slot 0 first); interleaved: byte
    e // per_byte holds consecutive elements. A row's planes come from its fields (Format.planes)."""

    field: str | None
    bits: int
    shift: int
    pack: str
    unit: int
    msb_first: bool = False

    @property
    def per_byte(self) -> int:
        return 8 // self.bits

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def run(self) -> int:
        """Bytes of one slot run (split packing: a unit's bytes); interleaved: 1."""
        return self.unit // self.per_byte if self.pack == "split" else 1

    def locate(self, e: Any) -> tuple[Any, Any]:
        """(byte, bit shift) of element e's bits in this plane (see row.locate)."""
        p = self.per_byte
        if self.pack == "split":
            byte, slot = (e // self.unit) * self.run + e % self.run, (e % self.unit) // self.run
        else:
            byte, slot = e // p, e % p
        return byte, ((p - 1) - slot if self.msb_first else slot) * self.bits


# Type and value rules for every row field: (check, what is allowed). Family-specific rules
# (which combinations make sense) live in the family modules.
_RULES = {
    "name": (lambda v: _identifier(v) and v.islower(), "a lowercase identifier"),
    "family": (_identifier, "the name of a registered family"),
    "doc": (_text, "one printable line without '/*' or '*/'"),
    "bits": (lambda v: _int(v) and 1 <= v <= 8, "an int in 1..8"),
    "block": (lambda v: _int(v) and v > 0, "a positive int"),
    "blocksizes": (lambda v: isinstance(v, tuple) and v and all(_int(b) and 0 < b <= 1 << 20 for b in v),
                   "a non-empty tuple of positive ints"),  # fmt: skip
    "pack": (lambda v: v in PACKS, f"one of {PACKS}"),
    "msb_first": (lambda v: isinstance(v, bool), "a bool"),
    "code": (lambda v: v in CODE_KINDS, f"one of {CODE_KINDS}"),
    "scale": (lambda v: v in SCALE_KINDS, f"one of {SCALE_KINDS}"),
    "table": (lambda v: v is None or _f32_tuple(v), "None or a tuple of finite float32 values"),
    "step": (lambda v: _int(v) and 1 <= v <= 256, "an int in 1..256"),
    "zero": (lambda v: _int(v) and 0 <= v <= 256, "an int in 0..256"),
    "fields": (lambda v: isinstance(v, tuple) and all(isinstance(f, Field) for f in v), "a tuple of Field"),
    "block_bytes": (lambda v: v is None or (_int(v) and v > 0), "None or a positive int"),
    "high_bit_field": (lambda v: v is None or _identifier(v), "None or a field name"),
    "nested_block": (lambda v: v is None or (_int(v) and v > 0), "None or a positive int"),
    "nested_table": (lambda v: v is None or _f32_tuple(v), "None or a tuple of finite float32 values"),
    "scale_modes": (lambda v: isinstance(v, tuple) and set(v) <= set(SCALE_MODES), f"a subset of {SCALE_MODES}"),
    "gguf_type": (lambda v: v is None or (_int(v) and v >= 0), "None or a non-negative int"),
    "low_field": (_identifier, "a field name"),
    "unit": (lambda v: v is None or (_int(v) and 0 < v <= 1 << 20), "None or a positive int"),
    "high_bits": (lambda v: _int(v) and 1 <= v <= 4, "an int in 1..4"),
    "high_unit": (lambda v: v is None or (_int(v) and 0 < v <= 1 << 20), "None or a positive int"),
    "sub_block": (lambda v: v is None or (_int(v) and 0 < v <= 1 << 20), "None or a positive int"),
    "sub_scales": (lambda v: v is None or v in SUB_SCALE_KINDS, f"None or one of {SUB_SCALE_KINDS}"),
    "scales_field": (lambda v: v is None or _identifier(v), "None or a field name"),
}


@dataclass(frozen=True)
class Format:
    name: str
    family: str
    doc: str
    bits: int  # bits of one code, the high bit of q5 included
    block: int  # elements per block (the default where several are allowed)
    blocksizes: tuple[int, ...]  # allowed values of block (GGUF: exactly one)
    pack: str
    msb_first: bool
    code: str
    scale: str
    table: tuple[float, ...] | None = None  # code -> value, for code == "table"
    step: int = 1  # value code = q*step - zero, for unsigned codes
    zero: int = 0
    fields: tuple[Field, ...] = ()  # inline block struct; empty when statistics are separate
    block_bytes: int | None = None  # declared bytes per block (inline formats), checked
    high_bit_field: str | None = None  # q5: the u32 field whose bit e is element e's fifth bit
    nested_block: int | None = None  # blocks of absmax per absmax2 value, where nesting exists
    nested_table: tuple[float, ...] | None = None  # code2 of nested statistics
    scale_modes: tuple[str, ...] = ()  # plain integers: where scales live
    gguf_type: int | None = None  # GGMLQuantizationType value
    low_field: str = "qs"  # inline rows: the field holding the low code bits (q6_k: ql)
    unit: int | None = None  # split packing: elements per packing unit of the low bits (None: the block)
    high_bits: int = 1  # bits per element in high_bit_field (q6_k: 2)
    high_unit: int | None = None  # None: element e's high bits at bit e * high_bits of high_bit_field
    #                               (q5_0); else split-packed in units of high_unit elements (K-quants)
    sub_block: int | None = None  # elements per entry of scales_field (None: one scale, d, per block)
    sub_scales: str | None = None  # how scales_field stores them (SUB_SCALE_KINDS)
    scales_field: str | None = None  # the inline field of per-sub-block scales

    def __post_init__(self) -> None:
        for f in fields(self):
            ok, allowed = _RULES[f.name]
            value = getattr(self, f.name)
            if not ok(value):
                raise FormatError(f"format {str(self.name)[:40]!r}: field {f.name!r}: {value!r:.80}; "
                                  f"allowed: {allowed}")  # fmt: skip
        if self.low_bits < 1 or 8 % self.low_bits:
            raise FormatError(f"format {self.name!r}: field 'bits': low bits must be 1, 2, 4 or 8 (plus a high bit)")

    # ---- derived facts (templates and codecs read these, never recompute them) ----
    @property
    def low_bits(self) -> int:
        """Bits of a code stored in the packed code bytes (the fifth bit of q5 lives in qh)."""
        return self.bits - self.high_bits if self.high_bit_field else self.bits

    @property
    def planes(self) -> tuple[Plane, ...]:
        """Where the bits of a code are stored: the low plane, then the high plane if any."""
        low = Plane(self.codes_field, self.low_bits, 0, self.pack, self.unit or self.block, self.msb_first)
        if not self.high_bit_field:
            return (low,)
        pack = "interleaved" if self.high_unit is None else "split"
        return low, Plane(self.high_bit_field, self.high_bits, self.low_bits, pack, self.high_unit or self.block)

    @property
    def sub_count(self) -> int:
        """Scales per block (1 without sub-block scales)."""
        return self.block // self.sub_block if self.sub_block else 1

    @property
    def has_min(self) -> bool:
        """Sub-block mins (times dmin) are subtracted: value = q * d*sc - dmin*mn."""
        return self.sub_scales in SUB_SCALES_WITH_MIN

    @property
    def per_byte(self) -> int:
        return 8 // self.low_bits

    @property
    def mask(self) -> int:
        return (1 << self.low_bits) - 1

    @property
    def inline(self) -> bool:
        """Statistics live inside each block (GGUF) rather than in separate arrays."""
        return bool(self.fields)

    @property
    def nestable(self) -> bool:
        return self.nested_block is not None

    @property
    def offsets(self) -> dict[str, int]:
        """Byte offset of each inline field inside a block."""
        out, at = {}, 0
        for f in self.fields:
            out[f.name] = at
            at += f.nbytes
        return out

    def member(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise FormatError(f"format {self.name!r} has no field {name!r}")

    def has_field(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    @property
    def block_align(self) -> int:
        """Largest power of two dividing every block's start: the widest safe load of a block."""
        return math.gcd(self.block_bytes or 16, 16) if self.inline else 16

    @property
    def codes_field(self) -> str | None:
        return self.low_field if self.inline else None

    @property
    def bits_per_weight(self) -> float:
        if self.inline:
            return 8.0 * self.block_bytes / self.block
        return float(self.bits)

    @property
    def qmin(self) -> int:
        """Smallest code value (after step and zero point) of an integer-coded format."""
        return -(1 << (self.bits - 1)) if self.code == "signed" else -self.zero

    @property
    def qmax(self) -> int:
        """Largest code value (after step and zero point) of an integer-coded format."""
        if self.code == "signed":
            return (1 << (self.bits - 1)) - 1
        return ((1 << self.bits) - 1) * self.step - self.zero

    def code_bytes(self, block: int) -> int:
        """Bytes of packed codes in one block of `block` elements."""
        return block * self.low_bits // 8

    @property
    def run(self) -> int | None:
        """Split packing: codes per slot run (the bytes of one packing unit's codes); else None."""
        return (self.unit or self.block) // self.per_byte if self.pack == "split" else None


def locate(fmt: Format, e: Any, plane: int = 0) -> tuple[Any, Any]:
    """(byte, bit shift) of element e's bits in one plane of fmt (0: the low code bits, 1: the high
    bits), the byte counted from the start of the plane's field in e's block (e < block), or of
    the flat codes for separate statistics.

    Split packing works in units of `unit` elements (the block unless the row says otherwise):
    unit u's codes are a run of unit // per_byte bytes, byte r holding elements r, r + run, ...
    of the unit (q4_0 pairs elements j and j+16 in byte j; q4_k pairs j and j+32 in each 64).
    Interleaved packing: byte e // per_byte, slot e % per_byte. Slot s occupies bits
    [s*bits, (s+1)*bits) from the least significant bit, or from the most significant one when
    msb_first is set. A q5_0 high plane (high_unit None) is interleaved: bit e of the field.

    e may be an int, a numpy array, or a symbolic index (kernels.cexpr.Sym): the same rule then
    gives numbers to the reference codec and C expressions to the templates.
    """
    return fmt.planes[plane].locate(e)
