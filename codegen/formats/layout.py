"""The "planes" layout of an inline block row: the same bytes as its blocks, regrouped by field.

A row's blocks interleave their fields (q4_0: f16 d, then 16 code bytes, 18 bytes a block), so a
block's codes are only as aligned as the block size allows (q4_0: 2 bytes). The planes layout
keeps one plane per field, holding that field of every block in block order (plane bytes =
blocks x field bytes). The planes are laid out one after another in one buffer, widest
per-block alignment first (field order among equals), so each plane starts at a multiple of its
own alignment and the buffer has no padding: it is exactly as long as the blocks. A field's
alignment in its plane is the largest power of two (at most 16) dividing its bytes: q4_0's codes
are 16-byte aligned there, its d 2-byte aligned.

Everything here is derived from the row's `fields`; no family is asked. The blocks layout stays
the interchange format (dequantize, to_gguf, to_bnb read blocks); planes are a second copy a
kernel reads faster. `to_planes` / `from_planes` are the numpy reference of the repack kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import QKGenValueError
from .row import Format

LAYOUTS = ("blocks", "planes")
MAX_ALIGN = 16  # the widest load a kernel makes (uint4)


@dataclass(frozen=True)
class FieldPlane:
    """One plane of a row: field `field` (C type `ctype`) of every block, `nbytes` per block, each
    block's entry aligned to `align` bytes. The plane starts at byte `before * blocks` of the
    planes buffer (`before`: the bytes per block of the planes ahead of it); `offset` is the
    field's byte offset in a block of the blocks layout."""

    field: str
    ctype: str
    nbytes: int
    align: int
    before: int
    offset: int

    def start(self, nblocks: int) -> int:
        """Byte offset of the plane in a planes buffer of `nblocks` blocks."""
        return self.before * nblocks


def field_align(nbytes: int) -> int:
    """The alignment of entry b of a plane of nbytes-byte entries that starts 16-byte aligned."""
    return math.gcd(nbytes, MAX_ALIGN)


def field_planes(fmt: Format) -> tuple[FieldPlane, ...]:
    """The planes of an inline row, in buffer order (widest alignment first, then field order)."""
    if not fmt.inline:
        raise QKGenValueError(f"format: {fmt.name} has separate statistics, no blocks to regroup; "
                              "allowed: an inline block row")  # fmt: skip
    order = sorted(fmt.fields, key=lambda f: -field_align(f.nbytes))  # sorted() is stable
    out, before = [], 0
    for f in order:
        out.append(FieldPlane(f.name, f.ctype, f.nbytes, field_align(f.nbytes), before, fmt.offsets[f.name]))
        before += f.nbytes
    return tuple(out)


def plane_of(fmt: Format, field: str) -> FieldPlane:
    for p in field_planes(fmt):
        if p.field == field:
            return p
    raise QKGenValueError(f"field: {fmt.name} has no field {field!r}; allowed: "
                          f"{', '.join(f.name for f in fmt.fields)}")  # fmt: skip


def plane_load_align(fmt: Format, field: str, at: int, nbytes: int) -> int:
    """The widest alignment (<= 16) of every load of `nbytes` bytes from byte `at` of a block's
    entry in the plane of `field` (the planes counterpart of ops.spec.load_align)."""
    p = plane_of(fmt, field)
    return math.gcd(p.align, at, nbytes & -nbytes, MAX_ALIGN)


def check_layout(layout: object) -> str:
    if layout not in LAYOUTS:
        raise QKGenValueError(f"layout: {layout!r}; allowed: {', '.join(LAYOUTS)}")
    return layout  # type: ignore[return-value]


def to_planes(fmt: Format, blocks: np.ndarray) -> np.ndarray:
    """The planes buffer (uint8, as long as `blocks`) of the block bytes `blocks` of row fmt."""
    raw = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1)
    if raw.size % fmt.block_bytes:
        raise QKGenValueError(f"blocks: {raw.size} bytes; allowed: whole {fmt.block_bytes}-byte {fmt.name} blocks")
    per = raw.reshape(-1, fmt.block_bytes)
    return np.concatenate([per[:, p.offset : p.offset + p.nbytes].reshape(-1) for p in field_planes(fmt)])


def from_planes(fmt: Format, planes: np.ndarray) -> np.ndarray:
    """The block bytes (uint8) of a planes buffer of row fmt: the inverse of to_planes."""
    raw = np.ascontiguousarray(planes, dtype=np.uint8).reshape(-1)
    if raw.size % fmt.block_bytes:
        raise QKGenValueError(f"planes: {raw.size} bytes; allowed: whole {fmt.block_bytes}-byte {fmt.name} blocks")
    nblocks = raw.size // fmt.block_bytes
    out = np.empty((nblocks, fmt.block_bytes), np.uint8)
    for p in field_planes(fmt):
        at = p.start(nblocks)
        out[:, p.offset : p.offset + p.nbytes] = raw[at : at + nblocks * p.nbytes].reshape(nblocks, p.nbytes)
    return out.reshape(-1)
