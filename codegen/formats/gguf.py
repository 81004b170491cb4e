"""GGUF legacy blocks (Q4_0 .. Q8_1): 32 elements per block, statistics inside the block struct,
laid out exactly as ggml-common.h declares them (f16 d first, then m / qh / s, then the codes).

ggml's reference quantizers (quantize_row_*_ref), reimplemented from their definition:
zero-point codes: d = x[argmax |x|] / -zero, q = min(2^bits - 1, trunc(x * (1/d) + (zero + 0.5)));
d_m codes: d = (max - min) / (2^bits - 1), m = min, q = min(2^bits - 1, trunc((x - min) * (1/d) + 0.5));
signed codes: d = amax / 127, q = roundf(x * (1/d)) (half away from zero); 1/d is 0 where d is 0.
d and m are stored as f16 (round to nearest even). A row with an f16 field "s" (q8_1) stores
s = f16(f32(sum q) * d), d the float32 d before its f16 rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import QKGenValueError
from . import codec, subscales
from .family import Family, register_family
from .qtensor import QTensor
from .row import Field, Format

_F32 = np.float32
BLOCK = 32


class Gguf(Family):
    name = "gguf"
    sample_shape = (7, 160)  # whole blocks only

    def check_row(self, row: Format, need) -> None:
        need(row.inline, "fields", "GGUF blocks hold their statistics inline")
        need(len(row.blocksizes) == 1, "blocksizes", "inline blocks have one fixed size")
        need(row.has_field("d") and row.member("d").ctype == "f16", "fields", "needs an f16 'd'")
        need(row.has_field("qs"), "fields", "needs the codes field 'qs'")
        need(row.member("qs").nbytes == row.code_bytes(row.block), "fields",
             f"qs holds {row.member('qs').nbytes} bytes, {row.code_bytes(row.block)} expected")  # fmt: skip
        need(sum(f.nbytes for f in row.fields) == row.block_bytes, "block_bytes",
             f"declared {row.block_bytes}, fields sum to {sum(f.nbytes for f in row.fields)}")  # fmt: skip
        need((row.scale == "d_m") == row.has_field("m"), "fields", "'m' goes with scale d_m")
        need(row.scale in ("d", "d_m"), "scale", "GGUF blocks scale by d (and m)")
        need(row.offsets["d"] == 0, "fields", "'d' must lead the block")
        need(row.pack == "interleaved" or row.per_byte == 2, "pack", "split packing pairs two codes")
        if row.high_bit_field:
            need(row.has_field(row.high_bit_field) and row.member(row.high_bit_field).nbytes * 8 == row.block,
                 "high_bit_field", "needs one bit per element")  # fmt: skip

    def name_parts(self, fmt, blocksize, nested, scale_mode) -> list[str]:
        return []  # one block size, no variants

    def chunk_limit(self, fmt: Format, blocksize: int, scale_mode) -> int:
        return blocksize  # one d (and m) per block

    def weight_inputs(self, fmt, nested, scale_mode) -> list[tuple[str, str, str]]:
        return [("data", "in", "u8")]

    def expected_arrays(self, qt: QTensor) -> dict[str, tuple[str, int]]:
        if qt.n % qt.format.block:
            raise QKGenValueError(f"shape: {qt.shape} has {qt.n} elements; {qt.format.name} needs a multiple "
                                  f"of {qt.format.block}")  # fmt: skip
        return {"data": ("uint8", qt.data_bytes)}

    def element_scales(self, qt: QTensor, data: np.ndarray):
        fmt = qt.format
        if fmt.sub_scales is not None:  # K-quants, FP4: a scale (and min) per sub-block
            return subscales.element_scales(fmt, data, qt.n)
        blocks = data.reshape(-1, fmt.block_bytes)
        d = np.repeat(codec.read_float(blocks, fmt, "d"), fmt.block)
        m = np.repeat(codec.read_float(blocks, fmt, "m"), fmt.block) if fmt.scale == "d_m" else None
        return d, m

    def from_gguf(self, blocks: Any, fmt: Format, shape: Any) -> QTensor:
        return from_gguf(blocks, fmt, shape)

    def to_gguf(self, qt: QTensor) -> Any:
        return to_gguf(qt)

    def quantize(self, x, fmt, blocksize, nested, scale_mode, group_size) -> QTensor:
        from .registry import check_blocksize

        self.check_variant(fmt, nested, scale_mode)
        check_blocksize(fmt, blocksize)
        if x.size % fmt.block:
            raise QKGenValueError(f"x: {x.size} elements; {fmt.name} needs a multiple of {fmt.block}")
        data = self.quantize_blocks(fmt, np.ascontiguousarray(x, dtype=_F32).reshape(-1, fmt.block))
        return QTensor(format=fmt, shape=x.shape, data=data.reshape(-1), blocksize=fmt.block)

    def quantize_blocks(self, fmt: Format, blocks: np.ndarray) -> np.ndarray:
        """The block structs [nblocks, block_bytes] of float32 blocks [nblocks, block] (ggml's rule)."""
        codes, d, m = _statistics(blocks, fmt)
        data = codec.pack_codes(codes, fmt, blocks.size).reshape(-1, fmt.block_bytes)
        fields = {"d": d, "m": m}
        if fmt.has_field("s"):  # q8_1: s = d * sum(q), the int sum times the f32 d, stored as f16
            fields["s"] = codes.sum(axis=1).astype(_F32) * d
        for name, value in fields.items():
            if value is not None:
                at = fmt.offsets[name]
                data[:, at : at + 2] = codec.f16_bytes(value)
        return data


def _statistics(blocks: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """ggml's per-type choice of statistics: (codes [nb, block], d f32 [nb], m f32 [nb] or None)."""
    top = (1 << fmt.bits) - 1
    if fmt.scale == "d_m":  # asymmetric: min maps to code 0, max to the top code
        lo, hi = blocks.min(axis=1), blocks.max(axis=1)
        d = (hi - lo) / _F32(top)
        v = (blocks - lo[:, None]) * codec.inverse(d)[:, None] + _F32(0.5)
        return np.minimum(top, np.trunc(v)).astype(np.int64), d, lo
    if fmt.code == "unsigned":  # zero point: the largest-magnitude value maps to code 0
        pick = np.take_along_axis(blocks, np.abs(blocks).argmax(axis=1)[:, None], axis=1)[:, 0]
        d = pick / _F32(-fmt.zero)
        v = blocks * codec.inverse(d)[:, None] + _F32(fmt.zero + 0.5)
        return np.minimum(top, np.trunc(v)).astype(np.int64), d, None
    d = np.abs(blocks).max(axis=1) / _F32(fmt.qmax)  # signed: symmetric, roundf
    with np.errstate(invalid="ignore"):
        q = codec.roundf(blocks * codec.inverse(d)[:, None])
    return np.where(np.isnan(q), 0, q).astype(np.int64), d, None  # the NaN element itself codes 0


# ---- GGUF interop: block bytes <-> QTensor, sharing memory ----


def from_gguf(blocks: Any, fmt: Format, shape: Any) -> QTensor:
    from .qtensor import validate
    if not isinstance(shape, (tuple, list)) or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                                       for s in shape):  # fmt: skip
        raise QKGenValueError(f"shape: {shape!r}; allowed: a tuple of ints in torch order [N, K]")
    shape = tuple(int(s) for s in shape)
    dshape = tuple(int(s) for s in getattr(blocks, "shape", ()))
    if len(dshape) == 2 and len(shape) >= 2:
        rows_, row_bytes = int(np.prod(shape[:-1])), shape[-1] // fmt.block * fmt.block_bytes
        if dshape != (rows_, row_bytes):  # gguf-py reports [K, N]; the data array knows the truth
            raise QKGenValueError(f"shape: {shape} does not match the data array {list(dshape)} "
                                  f"(rows x row bytes); allowed: torch order [N, K], e.g. "
                                  f"[{dshape[0]}, {dshape[1] // fmt.block_bytes * fmt.block}]")  # fmt: skip
    qt = QTensor(format=fmt, shape=shape, data=blocks.reshape(-1), blocksize=fmt.block)
    validate(qt)
    return qt


def to_gguf(qt: QTensor) -> Any:
    return qt.data.reshape(qt.rows, -1)


def row(name: str, gtype: int, fields: tuple[Field, ...], nbytes: int, doc: str, **kw) -> Format:
    return Format(name=name, family="gguf", doc=doc, block=BLOCK, blocksizes=(BLOCK,), fields=fields,
                  block_bytes=nbytes, msb_first=False, gguf_type=gtype, **kw)  # fmt: skip


FAMILY = register_family(Gguf())
