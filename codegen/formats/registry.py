"""The registered rows: the table's, plus any added at run time through the same checks."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import FormatError
from .family import family_of
from .row import Format

_ROWS: dict[str, Format] = {}
FORMATS = MappingProxyType(_ROWS)  # a live, read-only view: name -> row


def check_row(row: Format) -> None:
    """Reject an invalid row with a message naming the field (ggml-style static asserts). Field
    types were checked when the row was made; these are the rules between fields."""
    if not isinstance(row, Format):
        raise FormatError(f"row: {type(row).__name__}; allowed: a qkgen.formats.Format")

    def need(ok: bool, fld: str, why: str) -> None:
        if not ok:
            raise FormatError(f"format {row.name!r}: field {fld!r}: {why}")

    need(row.block in row.blocksizes, "block", f"default {row.block} not in blocksizes")
    if row.code == "table":
        need(row.table is not None and len(row.table) == 1 << row.bits, "table", f"needs {1 << row.bits} entries")
    else:
        need(row.table is None, "table", "only table codes have a table")
    need(row.code != "signed" or row.zero == 0, "zero", "signed codes have no zero point")
    need(row.high_bit_field is None or row.has_field(row.high_bit_field), "high_bit_field", "names no field")
    if row.pack == "split":
        need(row.inline, "pack", "split packing is defined per block: inline blocks only")
    need(row.unit is None or (row.pack == "split" and row.block % row.unit == 0 and row.unit % row.per_byte == 0),
         "unit", "split packing only, dividing the block into whole bytes")  # fmt: skip
    need(row.high_bit_field is not None or (row.high_bits == 1 and row.high_unit is None), "high_bits",
         "high_bits and high_unit describe high_bit_field")  # fmt: skip
    need(8 % row.high_bits == 0 and (row.high_unit is None or row.block % row.high_unit == 0), "high_unit",
         "high bits divide a byte; units divide the block")  # fmt: skip
    for p in row.planes if row.inline else ():
        need(row.has_field(p.field), "fields", f"the code plane {p.field!r} names no field")
        need(row.member(p.field).nbytes * 8 == row.block * p.bits, "fields",
             f"{p.field!r} holds {row.member(p.field).nbytes} bytes, {row.block * p.bits // 8} expected")  # fmt: skip
        need(p.unit % p.per_byte == 0, "fields", f"{p.field!r}: units of whole bytes")
    _check_sub_scales(row, need)
    family_of(row).check_row(row, need)


# (sub-blocks, bytes of scales_field) of the packed encodings; the others take one byte per sub-block.
_SUB_SCALE_BYTES = {"k4": (8, 12), "k3": (16, 12)}


def _check_sub_scales(row: Format, need) -> None:
    kind = row.sub_scales
    need((kind is None) == (row.sub_block is None) == (row.scales_field is None), "sub_scales",
         "sub_block, sub_scales and scales_field go together")  # fmt: skip
    if kind is None:
        return
    need(row.inline and row.block % row.sub_block == 0, "sub_block", "inline rows, dividing the block")
    need(row.has_field(row.scales_field), "scales_field", "names no field")
    count, nbytes = _SUB_SCALE_BYTES.get(kind, (row.sub_count, row.sub_count))
    need(row.sub_count == count and row.member(row.scales_field).nbytes == nbytes, "scales_field",
         f"{kind} stores {count} sub-block scales in {nbytes} bytes")  # fmt: skip
    need(row.has_min == (row.scale == "d_m"), "scale", f"d_m goes with sub-block mins ({kind})")


def register(row: Format) -> Format:
    """Add a row (checked as the table's own rows are). A name already taken is an error."""
    check_row(row)
    if row.name in _ROWS:
        raise FormatError(f"format {row.name!r}: field 'name': already registered")
    _ROWS[row.name] = row
    return row


def rows() -> tuple[Format, ...]:
    return tuple(_ROWS.values())


def get(name: Any) -> Format:
    """The row called `name`: a qkgen name ("q4_1"), a GGUF type name ("Q4_1"), a GGMLQuantizationType
    (enum or int), or a Format that is the registered row of its name."""
    if isinstance(name, Format):
        if _ROWS.get(name.name) != name:
            raise FormatError(f"format: a Format named {name.name!r} that is not the registered row; "
                              "register it under a new name with qkgen.formats.register()")  # fmt: skip
        return name
    if isinstance(name, str):
        row = _ROWS.get(name) or _ROWS.get(name.lower())
        if row is not None:
            return row
    elif isinstance(name, (int, np.integer)) and not isinstance(name, bool):  # gguf's enum is an IntEnum
        for row in _ROWS.values():
            if row.gguf_type == int(name):
                return row
    raise FormatError(f"format: unknown format {name!r}; allowed: {', '.join(_ROWS)}")


def check_blocksize(fmt: Format, blocksize: Any) -> int:
    """Validate a blocksize (group size for plain integers) for `fmt`; None means the default."""
    if blocksize is None:
        return fmt.block
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)) or (
        int(blocksize) not in fmt.blocksizes
    ):
        what = family_of(fmt).blocksize_arg
        raise FormatError(f"{what}: {blocksize!r} is not allowed for {fmt.name}; allowed: "
                          f"{', '.join(map(str, fmt.blocksizes))}")  # fmt: skip
    return int(blocksize)
