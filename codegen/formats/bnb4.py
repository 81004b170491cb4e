"""bitsandbytes 4-bit (NF4, FP4): two codes per byte, high nibble first, a 16-entry table, an f32
absmax per block in its own array, optionally nested (absmax quantized 8-bit blockwise).

bitsandbytes' 4-bit quantizer (its torch path, reimplemented from its behaviour): absmax = max|x|
per block. Full blocks scale by x * f32(1 / max(absmax, 1e-38)); the partial last block divides,
x / max(absmax, 1e-38), and stores that clamped absmax (an all-zero partial block stores 1e-38).
The scaled value, clamped to [-1, 1], takes the code of the nearest table entry by f32 midpoints
of the sorted table; a value on a midpoint goes to the lower entry. FP4 sorts +0 (code 0) before
-0 (code 8), so 0 and tiny negatives get code 0 and tiny positives (0, 0.0026] get code 8 (-0.0).
An odd tail is padded with the code of 0.0. Nested statistics: offset = mean(absmax), then
absmax - offset quantized 8-bit blockwise (block 256, the dynamic table).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..errors import QKGenValueError
from .bnb8 import Bnb8, blocks_of
from .family import register_family
from .row import Format

_F32 = np.float32
_TINY = _F32(1e-38)  # bitsandbytes clamps absmax to this (a float32 subnormal) before dividing
BLOCKSIZES = tuple(2**p for p in range(5, 13))  # 32 .. 4096
NESTED_BLOCK = 256


def nearest_sorted(scaled: np.ndarray, table: tuple[float, ...]) -> np.ndarray:
    """Index of the nearest table entry by f32 midpoints of the sorted table; midpoints go low.
    The sort is stable, so equal entries (FP4's +0 and -0) keep table order."""
    t = np.asarray(table, dtype=_F32)
    order = np.argsort(t, kind="stable")
    mids = (t[order[:-1]] + t[order[1:]]) / _F32(2)
    return order[np.searchsorted(mids, scaled, side="left")]


def codes_4bit(flat: np.ndarray, table: tuple[float, ...], block: int) -> tuple[np.ndarray, np.ndarray]:
    """(codes [n], absmax [nblocks]) by bitsandbytes' 4-bit rule (module docstring)."""
    blocks, last = blocks_of(flat, block)
    absmax = np.abs(blocks).max(axis=1)
    safe = np.maximum(absmax, _TINY)
    scaled = blocks * (_F32(1) / safe)[:, None]  # full blocks: multiply by the reciprocal
    if last != block:  # the partial block divides, and keeps its clamped absmax
        scaled[-1] = blocks[-1] / safe[-1]
        absmax[-1] = safe[-1]
    scaled = np.clip(scaled, -1, 1).reshape(-1)[: flat.size]
    return nearest_sorted(scaled, table), absmax


class Bnb4(Bnb8):
    name = "bnb4"
    sample_shape = (7, 333)
    bnb_functions = {"dequantize": "functional.dequantize_4bit", "matmul": "matmul_4bit",
                     "gemv": "functional.gemv_4bit"}  # fmt: skip

    def variant_words(self, fmt: Format) -> dict[str, dict]:
        return {"nested": {"nested": True}, "plain": {"nested": False}} if fmt.nestable else {"plain": {}}

    def check_row(self, row: Format, need) -> None:
        super().check_row(row, need)
        need(row.nested_table is None or len(row.nested_table) == 256, "nested_table", "needs 256 entries")
        need((row.nested_block is None) == (row.nested_table is None), "nested_block", "goes with nested_table")

    def variants(self, fmt: Format) -> Iterator[dict]:
        yield {"nested": False}
        if fmt.nestable:
            yield {"nested": True}

    def check_variant(self, fmt: Format, nested: bool, scale_mode: str | None) -> None:
        if nested and not fmt.nestable:
            from .registry import rows

            raise QKGenValueError(f"nested: {fmt.name} has no nested statistics; allowed for: "
                                  f"{', '.join(f.name for f in rows() if f.nestable)}")  # fmt: skip
        super().check_variant(fmt, False, scale_mode)

    def coder(self, flat, fmt, blocksize):
        codes, absmax = codes_4bit(flat, fmt.table, blocksize)
        return codes, absmax, int(nearest_sorted(np.zeros(1, _F32), fmt.table)[0])  # pad: the code of 0.0


def row(name: str, table: tuple[float, ...], nested_table: tuple[float, ...], doc: str) -> Format:
    return Format(
        name=name, family="bnb4", doc=doc, bits=4, block=64, blocksizes=BLOCKSIZES, pack="interleaved",
        msb_first=True, code="table", scale="absmax", table=table, nested_block=NESTED_BLOCK,
        nested_table=nested_table,
    )  # fmt: skip


FAMILY = register_family(Bnb4())
