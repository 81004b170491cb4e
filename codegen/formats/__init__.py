"""Formats: the table of rows, their families, the reference codecs and QTensor.

    qkgen.formats()              the registered rows (this module is callable)
    qkgen.formats.get("q4_1")    one row (GGUF names and enums work too)
    qkgen.formats.register(row)  add a row at run time, checked like the table's own

A format family is one module (bnb4, bnb8, gguf, plain_int, kquant, mxfp4) that owns every decision depending
on the kind of format; see family.py for the traits and docs/architecture.md for the data flow.
"""

from __future__ import annotations

import sys
import types

from ..errors import FormatError
from . import bnb4, bnb8, gguf, kquant, mxfp4, plain_int  # noqa: F401  (registers the families)
from .family import FAMILIES, Family, family_of, register_family
from .qtensor import QTensor, validate
from .registry import FORMATS, check_blocksize, check_row, get, register, rows
from .row import CODE_KINDS, FIELD_TYPES, PACKS, SCALE_KINDS, SCALE_MODES, SUB_SCALE_KINDS, Field, Format, Plane, locate
from .table import DYNAMIC8_TABLE, FP4_TABLE, NF4_TABLE, ROWS

for _row in ROWS:
    register(_row)


class _TableModule(types.ModuleType):
    """`qkgen.formats()` lists the rows while `qkgen.formats` stays this package: the API
    function and the table share one name without shadowing each other."""

    def __call__(self) -> list[Format]:
        return list(rows())


sys.modules[__name__].__class__ = _TableModule

__all__ = [
    "FormatError", "Format", "Field", "NF4_TABLE", "FP4_TABLE", "DYNAMIC8_TABLE", "QTensor", "FORMATS", "ROWS", "FAMILIES", "Family", "get", "register",
    "rows", "check_row", "check_blocksize", "family_of", "register_family", "locate", "validate",
    "CODE_KINDS", "FIELD_TYPES", "PACKS", "SCALE_KINDS", "SCALE_MODES", "SUB_SCALE_KINDS", "Plane",
]  # fmt: skip
