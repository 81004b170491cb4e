"""The one dtype table: every element type a kernel argument or an output can have.

A row gives the name qkgen uses everywhere ("f32", "bf16", "u8"), the C type a kernel stores it as,
its size, the numpy dtype of a host copy, the numpy/torch names accepted as input, and aliases.
Backends allocate and download by these names; the API resolves user dtypes through `lookup`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str
    ctype: str  # the C type a kernel reads or writes (f16/bf16 travel as their bits)
    size: int
    host: str  # numpy dtype of a host copy (bf16: uint16 bit patterns)
    accepts: tuple[str, ...]  # numpy / torch dtype names an input array may have
    aliases: tuple[str, ...] = ()
    is_float: bool = False  # an activation / output dtype

    @property
    def np(self) -> np.dtype:
        return np.dtype(self.host)


_ROWS = (
    DType("f32", "float", 4, "float32", ("float32",), ("float32", "float"), True),
    DType("f16", "ushort", 2, "float16", ("float16",), ("float16", "half"), True),
    DType("bf16", "ushort", 2, "uint16", ("bfloat16", "uint16"), ("bfloat16",), True),
    DType("u8", "uchar", 1, "uint8", ("uint8",), ("uint8",)),
    DType("i8", "char", 1, "int8", ("int8",), ("int8",)),
    DType("u32", "uint", 4, "uint32", ("uint32",), ("uint32",)),
    # element counts and offsets that may pass 2^32 (a dialect spells the argument type it allows)
    DType("u64", "size_t", 8, "uint64", ("uint64",), ("uint64",)),
    # exact integer sums (the exact_sum kernel's bins): OpenCL C's 64-bit `long`, which a dialect
    # spells otherwise where `long` may be 32 bits (Dialect.type_names)
    DType("i64", "long", 8, "int64", ("int64",), ("int64",)),
)
DTYPE_TABLE = MappingProxyType({d.name: d for d in _ROWS})
_LOOKUP = MappingProxyType({k: d for d in _ROWS for k in (d.name, *d.aliases)})

# The dtypes of activations and kernel outputs (the float ones), in table order.
FLOAT_DTYPES = tuple(d.name for d in _ROWS if d.is_float)


def get(name: str) -> DType:
    """The row called `name` (a qkgen dtype name only)."""
    from .errors import QKGenValueError

    try:
        return DTYPE_TABLE[name]
    except (KeyError, TypeError):
        raise QKGenValueError(f"dtype: {name!r} is not a qkgen dtype; allowed: {', '.join(DTYPE_TABLE)}") from None


def of_host(dtype: Any) -> str:
    """The qkgen dtype name of a host copy's numpy dtype (uint16 is bf16 bits: how they travel)."""
    from .errors import QKGenValueError

    name = np.dtype(dtype).name
    for row in _ROWS:
        if row.host == name:
            return row.name
    raise QKGenValueError(f"dtype: numpy {name}; allowed: {', '.join(d.host for d in _ROWS)}")


def float_dtype(dtype: Any, arg: str = "dtype") -> str:
    """'f32' | 'f16' | 'bf16' from a name, an alias, a numpy dtype or a torch dtype."""
    from .errors import QKGenValueError

    key = str(dtype).replace("torch.", "").lower() if isinstance(dtype, str) or hasattr(dtype, "is_floating_point") \
        else None
    if key is None:
        try:
            key = np.dtype(dtype).name
        except TypeError:
            key = str(dtype)
    row = _LOOKUP.get(key)
    if row is None or not row.is_float:
        raise QKGenValueError(f"{arg}: {dtype!r} is not supported; allowed: {', '.join(FLOAT_DTYPES)}")
    return row.name
