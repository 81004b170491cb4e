"""Plain integers (int1/int2/int4/int8): codes packed low bits first, f32 scales in their own
array, one per tensor, per row or per group of `group_size` elements of a row.

qkgen's own rule: scale = amax / max(|qmin|, qmax) per tensor / row / group (f32 division), codes =
clip(round_half_even(x / scale), qmin, qmax) (f32 division); a group whose scale is 0 stores the
code of value 0. For the two's-complement rows this lets +amax clip from |qmin| to qmax, one step.
Two-level codes {-1, +1} (int1) use the sign instead: scale = mean |x|, code +1 where x >= 0 else -1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import QKGenValueError
from . import codec
from .family import Family, register_family
from .qtensor import QTensor
from .row import SCALE_MODES, Format

_F32 = np.float32
GROUPS = tuple(2**p for p in range(5, 13))  # 32 .. 4096: a group fills whole 32-bit words
DEFAULT_GROUP = 128
_WHOLE_ROW = 1 << 30  # tensor and row scales: a chunk may run anywhere along the row


class PlainInt(Family):
    name = "int"
    blocksize_arg = "group_size"

    def check_row(self, row: Format, need) -> None:
        need(row.code in ("signed", "unsigned") and row.scale == "scale", "scale", "integer codes times a scale")
        need(bool(row.scale_modes), "scale_modes", f"a non-empty subset of {SCALE_MODES}")
        need(not row.inline and row.pack == "interleaved", "pack", "separate scales, interleaved codes")
        need(row.code != "signed" or row.zero == 0, "zero", "signed codes have no zero point")
        for g in row.blocksizes:
            need(g & (g - 1) == 0 and g % row.per_byte == 0, "blocksizes", f"{g}: a power of two of whole bytes")

    def variants(self, fmt: Format) -> Iterator[dict]:
        for mode in fmt.scale_modes:
            yield {"scale_mode": mode}

    def variant_words(self, fmt: Format) -> dict[str, dict]:
        modes = sorted(fmt.scale_modes, key=lambda m: m != "row")  # row first: the default
        return {m: {"scale_mode": m} for m in modes}

    def default_variant(self, fmt: Format) -> dict:
        return {"scale_mode": "row"}

    def check_variant(self, fmt: Format, nested: bool, scale_mode: str | None) -> None:
        if nested:
            super().check_variant(fmt, nested, None)
        if scale_mode not in fmt.scale_modes:
            raise QKGenValueError(f"scale_mode: {scale_mode!r}; allowed: {', '.join(fmt.scale_modes)}")

    def name_parts(self, fmt, blocksize, nested, scale_mode) -> list[str]:
        return ["group", f"g{blocksize}"] if scale_mode == "group" else [scale_mode]

    def chunk_limit(self, fmt, blocksize, scale_mode) -> int:
        return blocksize if scale_mode == "group" else _WHOLE_ROW

    def weight_inputs(self, fmt, nested, scale_mode) -> list[tuple[str, str, str]]:
        return [("data", "in", "u8"), ("scale", "in", "f32")]

    def launch_scalars(self, qt: QTensor) -> dict[str, Any]:
        return {"cols": qt.cols, "groups_per_row": qt.groups_per_row}

    def expected_arrays(self, qt: QTensor) -> dict[str, tuple[str, int]]:
        self.check_variant(qt.format, False, qt.scale_mode)
        count = {"tensor": 1, "row": qt.rows, "group": qt.rows * qt.groups_per_row}[qt.scale_mode]
        return {"data": ("uint8", qt.data_bytes), "scale": ("float32", 4 * count)}

    def element_scales(self, qt: QTensor, data: np.ndarray) -> tuple[np.ndarray, None]:
        scale = codec.host_array(qt.scale).astype(_F32, copy=False)
        if qt.scale_mode == "tensor":
            return np.full(qt.n, scale.reshape(-1)[0], dtype=_F32), None
        per_row = scale.reshape(qt.rows, -1)
        cols = np.arange(qt.cols) // qt.blocksize if qt.scale_mode == "group" else np.zeros(qt.cols, np.intp)
        return per_row[:, cols].reshape(-1), None

    def quantize(self, x, fmt, blocksize, nested, scale_mode, group_size) -> QTensor:
        mode = "row" if scale_mode is None else scale_mode
        self.check_variant(fmt, nested, mode)
        group = _group(fmt, blocksize, mode, group_size)
        groups, lengths, scale_shape = _groups(x, mode, group)
        q, scale = _codes(groups, lengths, fmt)
        if mode == "group":  # drop the padding columns again, back to row-major elements
            q = q.reshape(scale_shape[0], -1)[:, : x.shape[-1]]
        fields = (q.reshape(-1) + fmt.zero) // fmt.step  # value -> stored field
        data = codec.pack_codes(fields, fmt, x.size)
        return QTensor(format=fmt, shape=x.shape, data=data, blocksize=group, scale=scale.astype(_F32).reshape(scale_shape),
                       scale_mode=mode)  # fmt: skip


def _group(fmt: Format, blocksize: int | None, mode: str, group_size: int | None) -> int:
    from .registry import check_blocksize

    if group_size is not None and blocksize is not None and int(group_size) != int(blocksize):
        raise QKGenValueError(f"group_size: {group_size} differs from blocksize {blocksize}; give one")
    group = group_size if group_size is not None else blocksize
    if mode != "group":
        if group is not None and int(group) != fmt.block:
            raise QKGenValueError(f"group_size: {group} is only used with scale_mode='group'")
        return fmt.block
    return check_blocksize(fmt, group)


def _is_sign_code(fmt: Format) -> bool:
    """Two levels {-1, +1} (int1): no zero to round to, so the sign decides."""
    return fmt.qmin == -fmt.qmax and fmt.qmax - fmt.qmin == fmt.step


def _groups(x: np.ndarray, mode: str, group: int) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """x as [ngroups, glen] zero-padded, each group's true length, and the scale array's shape."""
    cols = x.shape[-1]
    rows = x.size // cols
    if mode == "tensor":
        return x.reshape(1, -1), np.array([x.size]), (1,)
    if mode == "row":
        return x.reshape(rows, cols), np.full(rows, cols), (rows,)
    ng = -(-cols // group)
    padded = np.zeros((rows, ng * group), dtype=_F32)
    padded[:, :cols] = x.reshape(rows, cols)
    lengths = np.minimum(group, cols - np.arange(ng) * group)
    return padded.reshape(rows * ng, group), np.tile(lengths, rows), (rows, ng)


def _codes(g: np.ndarray, lengths: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """(code values in [qmin, qmax] [ngroups, glen], scale f32 [ngroups]) for one group layout."""
    if _is_sign_code(fmt):
        scale = codec.mean_f32(np.abs(g), axis=1, count=lengths)  # padding zeros add nothing
        return np.where(g >= 0, fmt.qmax, fmt.qmin), scale
    scale = np.abs(g).max(axis=1) / _F32(max(-fmt.qmin, fmt.qmax))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.clip(np.rint(g / scale[:, None]), fmt.qmin, fmt.qmax)
    q = np.where(scale[:, None] > 0, q, 0)  # an all-zero group: the code of 0
    return q.astype(np.int64), scale


def row(name: str, bits: int, doc: str, **kw) -> Format:
    return Format(name=name, family="int", doc=doc, bits=bits, block=DEFAULT_GROUP, blocksizes=GROUPS,
                  pack="interleaved", msb_first=False, scale="scale", scale_modes=SCALE_MODES, **kw)  # fmt: skip


FAMILY = register_family(PlainInt())
