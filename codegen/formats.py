"""The format table: the single source of truth for every quantized format qkgen knows.

One frozen row per format. Every fact a kernel template or a reference codec needs is a field
of the row (or derived from fields); templates and codecs never hard-code a block size, a nibble
order or a table value. Rows are validated at import, like ggml's static_asserts: an invalid row
raises FormatError naming the row and the field.

Element numbering: a tensor is quantized over its flattened elements, in blocks of `block`
consecutive elements. Inside a block, element e's code sits at

    pack == "interleaved":  byte e // per_byte, slot e % per_byte
    pack == "split":        byte e % (block // per_byte), slot e // (block // per_byte)

where per_byte = 8 // low_bits, and slot s occupies bits [s*low_bits, (s+1)*low_bits) counted
from the least significant bit, or from the most significant bit when msb_first is set.
"""

from __future__ import annotations

import math
import sys
import types
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np


class FormatError(ValueError):
    """A format row, or a request for a format, that qkgen cannot honour."""


# Field types of inline (GGUF-style) block structs: name -> (bytes, numpy dtype).
FIELD_TYPES = MappingProxyType({"f16": (2, "<f2"), "u8": (1, "u1"), "i8": (1, "i1")})

# What a code means before scaling ("code" field of a row).
CODE_KINDS = ("table", "unsigned", "signed")
# How the scaled value is formed ("scale" field of a row):
#   absmax: table[q] * absmax[block]            (bitsandbytes, statistics in separate arrays)
#   d:      (q*step - zero) * d                 (GGUF, d inside the block)
#   d_m:    q * d + m                           (GGUF, d and m inside the block)
#   scale:  (q*step - zero) * scale[...]        (plain integers, scales in a separate array)
SCALE_KINDS = ("absmax", "d", "d_m", "scale")
PACKS = ("interleaved", "split")
FAMILIES = ("bnb4", "bnb8", "gguf", "int")
SCALE_MODES = ("tensor", "row", "group")


@dataclass(frozen=True)
class Field:
    """One member of an inline block struct, as in ggml-common.h."""

    name: str
    ctype: str
    count: int = 1

    @property
    def nbytes(self) -> int:
        return FIELD_TYPES[self.ctype][0] * self.count


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

    # ---- derived facts (templates and codecs read these, never recompute them) ----
    @property
    def low_bits(self) -> int:
        """Bits of a code stored in the packed code bytes (the fifth bit of q5 lives in qh)."""
        return self.bits - 1 if self.high_bit_field else self.bits

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
        return "qs" if self.inline else None

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


def _dynamic_map() -> tuple[float, ...]:
    """bitsandbytes' signed 8-bit dynamic-exponent code (Dettmers 2015), exactly in float32.

    For exponent i in 0..6, 2**i + 1 boundaries linspace(0.1, 1) in float32, their midpoints
    scaled by 10**(i-6), both signs; then 0 and 1. Sorted: 256 values. linspace is evaluated from
    both ends (first half from the start, second half from the end), as torch does.
    """
    vals: list[np.float32] = []
    for i in range(7):
        n = 2**i + 1
        k = np.arange(n)
        step = (np.float32(1.0) - np.float32(0.1)) / np.float32(n - 1)
        bounds = np.where(k < n // 2, np.float32(0.1) + k * step, np.float32(1.0) - (n - 1 - k) * step)
        bounds = bounds.astype(np.float32)
        means = (bounds[:-1] + bounds[1:]) / np.float32(2)
        scaled = np.float32(10.0 ** (i - 6)) * means
        vals += list(scaled) + list(-scaled)
    vals += [np.float32(0.0), np.float32(1.0)]
    return tuple(float(v) for v in np.sort(np.array(vals, dtype=np.float32)))


# bitsandbytes' NF4 levels (QLoRA, normal-float quantiles), float32 values.
NF4_TABLE = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)  # fmt: skip

# bitsandbytes' FP4: bit 3 is the sign, bits 0-2 index these magnitudes (x 1/12).
_FP4_MAGNITUDES = (0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0)
# Code 8 (sign set, magnitude 0) is -0.0, as bitsandbytes' CUDA kernels decode it (its CPU path and
# its code tensor say +0.0; the two compare equal, only the sign bit of a zero output differs).
FP4_TABLE = tuple(float(np.float32(s * m / 12.0)) for s in (1.0, -1.0) for m in _FP4_MAGNITUDES)

DYNAMIC8_TABLE = _dynamic_map()

_BNB4_BLOCKSIZES = tuple(2**p for p in range(5, 13))  # 32 .. 4096
_BNB8_BLOCKSIZES = tuple(2**p for p in range(6, 13))  # 64 .. 4096
_INT_GROUPS = tuple(2**p for p in range(5, 13))  # 32 .. 4096: a group fills whole 32-bit words


def _bnb4(name: str, table: tuple[float, ...], doc: str) -> Format:
    return Format(
        name=name, family="bnb4", doc=doc, bits=4, block=64, blocksizes=_BNB4_BLOCKSIZES,
        pack="interleaved", msb_first=True, code="table", scale="absmax", table=table,
        nested_block=256, nested_table=DYNAMIC8_TABLE,
    )  # fmt: skip


def _gguf(name: str, gtype: int, fields: tuple[Field, ...], nbytes: int, doc: str, **kw) -> Format:
    return Format(
        name=name, family="gguf", doc=doc, block=32, blocksizes=(32,), fields=fields,
        block_bytes=nbytes, msb_first=False, gguf_type=gtype, **kw,
    )  # fmt: skip


def _int(name: str, bits: int, doc: str, **kw) -> Format:
    return Format(
        name=name, family="int", doc=doc, bits=bits, block=128, blocksizes=_INT_GROUPS,
        pack="interleaved", msb_first=False, scale="scale", scale_modes=SCALE_MODES, **kw,
    )  # fmt: skip


_F16, _U8, _I8 = "f16", "u8", "i8"

ROWS: tuple[Format, ...] = (
    _bnb4("nf4", NF4_TABLE, "bitsandbytes NF4: 4-bit normal-float codes, f32 absmax per block"),
    _bnb4("fp4", FP4_TABLE, "bitsandbytes FP4: sign bit + 3-bit magnitude, f32 absmax per block"),
    Format(
        name="blockwise8", family="bnb8", bits=8, block=256, blocksizes=_BNB8_BLOCKSIZES,
        doc="bitsandbytes 8-bit blockwise dynamic (General8bit): 256-entry code, f32 absmax per block",
        pack="interleaved", msb_first=False, code="table", scale="absmax", table=DYNAMIC8_TABLE,
    ),  # fmt: skip
    _gguf("q4_0", 2, (Field("d", _F16), Field("qs", _U8, 16)), 18,
          "GGUF Q4_0: (q - 8) * d", bits=4, pack="split", code="unsigned", zero=8, scale="d"),
    _gguf("q4_1", 3, (Field("d", _F16), Field("m", _F16), Field("qs", _U8, 16)), 20,
          "GGUF Q4_1: q * d + m", bits=4, pack="split", code="unsigned", scale="d_m"),
    _gguf("q5_0", 6, (Field("d", _F16), Field("qh", _U8, 4), Field("qs", _U8, 16)), 22,
          "GGUF Q5_0: (q - 16) * d, fifth bits in qh", bits=5, pack="split", code="unsigned",
          zero=16, scale="d", high_bit_field="qh"),
    _gguf("q5_1", 7, (Field("d", _F16), Field("m", _F16), Field("qh", _U8, 4), Field("qs", _U8, 16)),
          24, "GGUF Q5_1: q * d + m, fifth bits in qh", bits=5, pack="split", code="unsigned",
          scale="d_m", high_bit_field="qh"),
    _gguf("q8_0", 8, (Field("d", _F16), Field("qs", _I8, 32)), 34,
          "GGUF Q8_0: q * d; 34-byte blocks are only 2-byte aligned", bits=8, pack="interleaved",
          code="signed", scale="d"),
    _gguf("q8_1", 9, (Field("d", _F16), Field("s", _F16), Field("qs", _I8, 32)), 36,
          "GGUF Q8_1: q * d with s = d * sum(q); the activation format of the integer-dot path",
          bits=8, pack="interleaved", code="signed", scale="d"),
    _int("int8", 8, "8-bit two's complement, f32 scale per tensor/row/group", code="signed"),
    _int("int4", 4, "4-bit two's complement, element 2i in the low nibble", code="signed"),
    _int("int2", 2, "2-bit, four per byte low bits first, value = field - 2", code="unsigned", zero=2),
    _int("int1", 1, "1-bit, eight per byte LSB first, 1 -> +1, 0 -> -1", code="unsigned", step=2,
         zero=1),
)  # fmt: skip


def _check(row: Format) -> None:
    """Reject an invalid row with a message naming the field (ggml-style static asserts)."""

    def need(ok: bool, fld: str, why: str) -> None:
        if not ok:
            raise FormatError(f"format {row.name!r}: field {fld!r}: {why}")

    need(row.name.isidentifier() and row.name.islower(), "name", "must be a lowercase identifier")
    need(row.family in FAMILIES, "family", f"must be one of {FAMILIES}")
    need(row.pack in PACKS, "pack", f"must be one of {PACKS}")
    need(row.code in CODE_KINDS, "code", f"must be one of {CODE_KINDS}")
    need(row.scale in SCALE_KINDS, "scale", f"must be one of {SCALE_KINDS}")
    need(row.low_bits in (1, 2, 4, 8), "bits", "low bits must be 1, 2, 4 or 8 (plus a high bit)")
    need(row.block in row.blocksizes, "block", f"default {row.block} not in blocksizes")
    for bs in row.blocksizes:
        need(bs > 0 and bs & (bs - 1) == 0, "blocksizes", f"{bs} is not a power of two")
        need(bs % row.per_byte == 0, "blocksizes", f"{bs} does not fill whole bytes")
    if row.code == "table":
        need(row.table is not None and len(row.table) == 1 << row.bits, "table",
             f"needs {1 << row.bits} entries")  # fmt: skip
        need(all(float(np.float32(v)) == v for v in row.table), "table", "values must be float32")
    else:
        need(row.table is None, "table", "only table codes have a table")
    need(row.pack == "interleaved" or row.per_byte == 2, "pack", "split packing pairs two codes")
    need(row.code != "signed" or row.zero == 0, "zero", "signed codes have no zero point")
    if row.nestable:
        need(row.nested_table is not None and len(row.nested_table) == 256, "nested_table",
             "nested statistics need a 256-entry code")  # fmt: skip
    if row.scale in ("absmax",):
        need(not row.inline, "fields", "absmax statistics are separate arrays")
    if row.scale == "scale":
        need(bool(row.scale_modes) and set(row.scale_modes) <= set(SCALE_MODES), "scale_modes",
             f"must be a subset of {SCALE_MODES}")  # fmt: skip
    if row.inline:
        need(len(row.blocksizes) == 1, "blocksizes", "inline blocks have one fixed size")
        need(row.has_field("d") and row.member("d").ctype == "f16", "fields", "needs an f16 'd'")
        need(row.has_field("qs"), "fields", "needs the codes field 'qs'")
        need(row.member("qs").nbytes == row.code_bytes(row.block), "fields",
             f"qs holds {row.member('qs').nbytes} bytes, {row.code_bytes(row.block)} expected")  # fmt: skip
        need(sum(f.nbytes for f in row.fields) == row.block_bytes, "block_bytes",
             f"declared {row.block_bytes}, fields sum to {sum(f.nbytes for f in row.fields)}")  # fmt: skip
        need((row.scale == "d_m") == row.has_field("m"), "fields", "'m' goes with scale d_m")
        need(row.offsets["d"] == 0, "fields", "'d' must lead the block")
    if row.high_bit_field:
        need(row.inline and row.member(row.high_bit_field).nbytes * 8 == row.block, "high_bit_field",
             "needs one bit per element")  # fmt: skip


def _index(rows: tuple[Format, ...]) -> MappingProxyType:
    seen: dict[str, Format] = {}
    for row in rows:
        _check(row)
        if row.name in seen:
            raise FormatError(f"format {row.name!r}: field 'name': duplicate")
        seen[row.name] = row
    return MappingProxyType(seen)


FORMATS = _index(ROWS)

# ggml's GGML_QUANT_SIZES, restated as an independent check of the rows above.
assert {f.name: (f.block, f.block_bytes) for f in ROWS if f.family == "gguf"} == {
    "q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
    "q8_0": (32, 34), "q8_1": (32, 36),
}  # fmt: skip
assert FORMATS["q8_0"].block_align == 2, "q8_0 blocks are only 2-byte aligned"


def get(name: str) -> Format:
    """The row called `name`, or a FormatError listing the known names."""
    try:
        return FORMATS[name]
    except (KeyError, TypeError):
        raise FormatError(f"format: unknown format {name!r}; allowed: {', '.join(FORMATS)}") from None


def check_blocksize(fmt: Format, blocksize: int | None) -> int:
    """Validate a blocksize (group size for plain integers) for `fmt`; None means the default."""
    if blocksize is None:
        return fmt.block
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)) or (
        int(blocksize) not in fmt.blocksizes
    ):
        what = "group_size" if fmt.family == "int" else "blocksize"
        raise FormatError(
            f"{what}: {blocksize!r} is not allowed for {fmt.name}; allowed: "
            f"{', '.join(map(str, fmt.blocksizes))}"
        )
    return int(blocksize)


class _TableModule(types.ModuleType):
    """`qkgen.formats()` lists the rows while `qkgen.formats` stays this module: the API
    function and the table share one name without shadowing each other."""

    def __call__(self) -> list[Format]:
        return list(ROWS)


sys.modules[__name__].__class__ = _TableModule
