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
    family_of(row).check_row(row, need)


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
