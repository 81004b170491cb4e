"""bitsandbytes 8-bit blockwise (General8bit): one code byte per element, a 256-entry table, an
f32 absmax per block in its own array. Also the coder of nested 4-bit statistics.

bitsandbytes' CPU quantizer (reimplemented from its documented behaviour): absmax = max|x|; an
all-zero block gets code 0. Otherwise c = clamp(x * f32(1/absmax), -1, 1) is looked up in a
65536-entry table over [-1, 1]: i = trunc(fma(65535, f32(1 + c) * 0.5, 0.5)), entry i = the first
code whose f32 midpoint (code[j] + code[j+1]) * 0.5 is >= f32(2i / 65535) - 1. That is the nearest
code up to ~1.5e-5 near midpoints, not exactly the nearest.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import FormatError, QKGenValueError
from . import codec
from .family import Family, register_family
from .qtensor import QTensor
from .row import Format

_F32 = np.float32
_LUT_STEPS = 65535  # bitsandbytes' CPU 8-bit quantizer: lookup resolution over [-1, 1]
BLOCKSIZES = tuple(2**p for p in range(6, 13))  # 64 .. 4096


def blocks_of(flat: np.ndarray, block: int) -> tuple[np.ndarray, int]:
    """Zero-padded [nblocks, block] view of flat and the element count of the last block."""
    n = flat.size
    nblocks = -(-n // block)
    padded = np.zeros(nblocks * block, dtype=_F32)
    padded[:n] = flat
    return padded.reshape(nblocks, block), n - (nblocks - 1) * block


@functools.lru_cache(maxsize=None)
def _lut(table: tuple[float, ...]) -> np.ndarray:
    """bitsandbytes' CPU lookup table: grid point i of [-1, 1] -> first code whose midpoint >= it."""
    t = np.asarray(table, dtype=_F32)
    if np.any(np.diff(t) < 0):
        raise FormatError("table: the 8-bit lookup quantizer needs a sorted table")
    mids = (t[:-1] + t[1:]) * _F32(0.5)
    i = np.arange(_LUT_STEPS + 1)
    grid = (_F32(2) * i.astype(_F32)) / _F32(_LUT_STEPS) - _F32(1)
    return np.searchsorted(mids, grid.astype(_F32), side="left").astype(np.int32)


def lookup_codes(c: np.ndarray, table: tuple[float, ...]) -> np.ndarray:
    """The code of each f32 c = clamp(x * f32(1/absmax), -1, 1) (NaN: the code of -1): its entry in
    the 65536-step table. Every step rounds monotonically, so the code never falls as c grows."""
    half = (_F32(1) + c.astype(_F32)) * _F32(0.5)
    index = np.trunc(codec.fma_f32(_LUT_STEPS, np.nan_to_num(half), 0.5)).astype(np.int64)
    return _lut(table)[index]


def codes_8bit(flat: np.ndarray, table: tuple[float, ...], block: int) -> tuple[np.ndarray, np.ndarray]:
    """bitsandbytes 8-bit blockwise (its native CPU path): (codes [n], absmax [nblocks])."""
    blocks, _ = blocks_of(flat, block)
    absmax = np.abs(blocks).max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = _F32(1) / absmax
        c = np.clip(blocks * inv[:, None], -1, 1)
    codes = lookup_codes(c, table)
    codes[absmax == 0] = 0  # an all-zero block writes code 0 (its value is -0.99 * 0 = -0)
    return codes.reshape(-1)[: flat.size], absmax


class Bnb8(Family):
    """Absmax statistics in their own f32 array, one value per block of `blocksize` elements."""

    name = "bnb8"
    sample_shape = (5, 333)
    bnb_functions = {"dequantize": "functional.dequantize_blockwise"}

    def check_row(self, row: Format, need) -> None:
        need(row.code == "table" and row.scale == "absmax", "scale", "bitsandbytes rows scale table codes by absmax")
        need(row.table is not None and len(row.table) == 1 << row.bits, "table", f"needs {1 << row.bits} entries")
        need(not row.inline and row.pack == "interleaved", "pack", "separate statistics, interleaved codes")
        for bs in row.blocksizes:
            need(bs & (bs - 1) == 0 and bs % row.per_byte == 0, "blocksizes", f"{bs}: a power of two of whole bytes")

    def weight_inputs(self, fmt: Format, nested: bool, scale_mode: str | None) -> list[tuple[str, str, str]]:
        if nested:
            return [("data", "in", "u8"), ("absmax_q", "in", "u8"), ("absmax2", "in", "f32"),
                    ("offset", "scalar", "f32")]  # fmt: skip
        return [("data", "in", "u8"), ("absmax", "in", "f32")]

    def launch_scalars(self, qt: QTensor) -> dict[str, Any]:
        return {"offset": qt.offset} if qt.nested else {}

    def expected_arrays(self, qt: QTensor) -> dict[str, tuple[str, int]]:
        fmt = qt.format
        out = {"data": ("uint8", qt.data_bytes)}
        if qt.nested and qt.offset is None:
            raise QKGenValueError("offset: nested statistics need the f32 offset")
        if qt.nested:
            out.update(absmax_q=("uint8", qt.nblocks), absmax2=("float32", 4 * -(-qt.nblocks // fmt.nested_block)))
        else:
            out["absmax"] = ("float32", 4 * qt.nblocks)
        return out

    def element_scales(self, qt: QTensor, data: np.ndarray) -> tuple[np.ndarray, None]:
        return np.repeat(absmax_of(qt), qt.blocksize)[: qt.n], None

    def from_bnb(self, packed: Any, state: Any) -> QTensor:
        return from_bnb(packed, state)

    def to_bnb(self, qt: QTensor) -> tuple[Any, Any]:
        return to_bnb(qt)

    def coder(self, flat: np.ndarray, fmt: Format, blocksize: int) -> tuple[np.ndarray, np.ndarray, int]:
        """(codes, absmax, fill code of a padding slot)."""
        codes, absmax = codes_8bit(flat, fmt.table, blocksize)
        return codes, absmax, 0

    def quantize(self, x, fmt, blocksize, nested, scale_mode, group_size) -> QTensor:
        from .registry import check_blocksize

        self.check_variant(fmt, nested, scale_mode)
        bs = check_blocksize(fmt, blocksize)
        flat = x.reshape(-1)
        codes, absmax, fill = self.coder(flat, fmt, bs)
        data = codec.pack_codes(codes, fmt, flat.size, fill=fill)
        stats: dict[str, Any] = {"absmax": absmax.astype(_F32)}
        if nested:
            absmax_q, absmax2, offset = nest_absmax(absmax, fmt)
            stats = {"absmax_q": absmax_q, "absmax2": absmax2, "offset": offset}
        return QTensor(format=fmt, shape=x.shape, data=data, blocksize=bs, **stats)


def absmax_of(qt: QTensor) -> np.ndarray:
    """Per-block float32 absmax; nested: f32(f32(code2[q] * absmax2[b // nested_block]) + offset)."""
    if not qt.nested:
        return codec.host_array(qt.absmax).reshape(-1).astype(_F32, copy=False)
    fmt = qt.format
    q = codec.host_array(qt.absmax_q).reshape(-1)
    absmax2 = codec.host_array(qt.absmax2).reshape(-1).astype(_F32, copy=False)
    code2 = np.asarray(fmt.nested_table, dtype=_F32)
    scaled = code2[q] * absmax2[np.arange(q.size) // fmt.nested_block]  # f32 multiply, rounded
    return scaled + _F32(qt.offset)  # then a separate f32 add


def nest_absmax(absmax: Any, fmt: Format, offset: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """Nested statistics (absmax_q u8, absmax2 f32, offset) of a nestable row.

    offset defaults to exact_mean_f32(absmax): the float32 nearest to the exact mean, which no
    summation order changes, so a device computing it from its own exact integer sums (the
    exact_sum kernel) gives the same offset on every backend. Pass bitsandbytes' own offset to
    reproduce its bytes exactly (its torch float32 mean sums in a CPU-dependent order and may
    differ by an ulp or two). Non-finite absmax (input quantized with allow_nonfinite) has no exact
    mean: the offset is then IEEE arithmetic's, NaN or inf. absmax - offset is then quantized 8-bit
    blockwise with the nested table and block, by the 8-bit rule above.
    """
    absmax = np.asarray(absmax, dtype=_F32).reshape(-1)
    if offset is not None:
        off = _F32(offset)
    elif np.isfinite(absmax).all():
        off = codec.exact_mean_f32(absmax, "absmax")
    else:
        off = codec.mean_f32(absmax)  # NaN or inf
    codes, absmax2 = codes_8bit(absmax - off, fmt.nested_table, fmt.nested_block)
    return codes.astype(np.uint8), absmax2.astype(_F32), float(off)


# ---- bitsandbytes interop: (packed, QuantState) <-> QTensor, sharing memory ----


def _check_code(table: tuple[float, ...] | None, code: Any, name: str) -> None:
    got = np.asarray(code.detach().cpu().numpy() if hasattr(code, "detach") else code, dtype=np.float32)
    if table is None or got.shape != (len(table),) or not np.array_equal(got, np.float32(table)):
        raise QKGenValueError(f"{name}: a custom code table is not supported; allowed: the format table's code")


def from_bnb(packed: Any, state: Any) -> QTensor:
    from .qtensor import validate
    from .registry import get

    fmt = get(getattr(state, "quant_type", None) or "blockwise8")
    _check_code(fmt.table, state.code, "state.code")
    # bnb's 8-bit QuantState has no shape; its packed codes keep the input's shape.
    shape = tuple(int(s) for s in (state.shape if state.shape is not None else packed.shape))
    if getattr(state, "nested", False):
        s2 = state.state2
        _check_code(fmt.nested_table, s2.code, "state.state2.code")
        if int(s2.blocksize) != fmt.nested_block:
            raise QKGenValueError(f"state.state2.blocksize: {s2.blocksize} is not supported; "
                                  f"allowed: {fmt.nested_block}")  # fmt: skip
        kw = dict(absmax_q=state.absmax, absmax2=s2.absmax, offset=float(state.offset))
    else:
        kw = dict(absmax=state.absmax)
    qt = QTensor(format=fmt, shape=shape, data=packed.reshape(-1), blocksize=int(state.blocksize), **kw)
    validate(qt)
    return qt


def to_bnb(qt: QTensor) -> tuple[Any, Any]:
    import torch
    from bitsandbytes.functional import QuantState

    fmt = qt.format
    t = lambda a: a if isinstance(a, torch.Tensor) else torch.from_numpy(np.asarray(a))  # noqa: E731
    kw: dict[str, Any] = dict(code=torch.tensor(fmt.table, dtype=torch.float32), blocksize=qt.blocksize,
                              dtype=torch.float32)  # fmt: skip
    four_bit = fmt.bits == 4  # bnb's 4-bit state carries shape and quant_type; its packed codes are [n/2, 1]
    if four_bit:
        kw.update(shape=torch.Size(qt.shape), quant_type=fmt.name)
    if qt.nested:
        state2 = QuantState(absmax=t(qt.absmax2), code=torch.tensor(fmt.nested_table, dtype=torch.float32),
                            blocksize=fmt.nested_block, dtype=torch.float32)  # fmt: skip
        kw.update(absmax=t(qt.absmax_q), state2=state2, offset=torch.tensor(qt.offset, dtype=torch.float32))
    else:
        kw.update(absmax=t(qt.absmax))
    packed = t(qt.data)
    return (packed.reshape(-1, 1) if four_bit else packed), QuantState(**kw)


def row(name: str, table: tuple[float, ...], doc: str) -> Format:
    return Format(name=name, family="bnb8", doc=doc, bits=8, block=256, blocksizes=BLOCKSIZES,
                  pack="interleaved", msb_first=False, code="table", scale="absmax", table=table)  # fmt: skip


FAMILY = register_family(Bnb8())
