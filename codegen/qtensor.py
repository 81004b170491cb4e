"""QTensor: packed codes plus statistics, the shape and the format.

Arrays are held as given (numpy on the host, or a backend's device array), so wrapping
bitsandbytes' (packed, QuantState) or GGUF block bytes copies nothing.

Fields by family:
  bnb4 / bnb8  data: u8 packed codes over the flattened tensor (bnb4: two per byte, ceil(n/2) bytes)
               absmax: f32 [nblocks]                      (plain statistics)
               absmax_q: u8 [nblocks], absmax2: f32 [ceil(nblocks/256)], offset: f32
                                                          (nested statistics)
  gguf         data: u8 [nblocks * block_bytes] block structs, n a multiple of 32
  int          data: u8 packed codes over the flattened tensor
               scale: f32 [1] (tensor), [rows] (row) or [rows, ceil(K/g)] (group)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import formats as F
from .errors import QKGenValueError


@dataclass(frozen=True)
class QTensor:
    format: F.Format
    shape: tuple[int, ...]
    data: Any
    blocksize: int
    absmax: Any = None
    absmax_q: Any = None
    absmax2: Any = None
    offset: float | None = None
    scale: Any = None
    scale_mode: str | None = None

    # ---- geometry ----
    @property
    def n(self) -> int:
        return math.prod(self.shape)

    @property
    def nblocks(self) -> int:
        return -(-self.n // self.blocksize)

    @property
    def nested(self) -> bool:
        return self.absmax_q is not None

    @property
    def rows(self) -> int:
        return math.prod(self.shape[:-1]) if len(self.shape) > 1 else 1

    @property
    def cols(self) -> int:
        return self.shape[-1] if self.shape else 1

    @property
    def groups_per_row(self) -> int:
        return -(-self.cols // self.blocksize)

    @property
    def data_bytes(self) -> int:
        """Bytes of `data` this shape needs."""
        fmt = self.format
        if fmt.inline:
            return self.nblocks * fmt.block_bytes
        return -(-self.n * fmt.low_bits // 8)

    def stats_bytes(self) -> int:
        """Bytes of statistics outside `data` (absmax, nested absmax, scales)."""
        if self.nested:
            return self.nblocks + 4 * (-(-self.nblocks // self.format.nested_block)) + 4
        if self.absmax is not None:
            return 4 * self.nblocks
        if self.scale is not None:
            return 4 * int(np.prod(np.shape(self.scale)))
        return 0

    def arrays(self) -> dict[str, Any]:
        """The arrays a kernel reads, by name."""
        names = ("data", "absmax", "absmax_q", "absmax2", "scale")
        return {k: getattr(self, k) for k in names if getattr(self, k) is not None}

    def with_arrays(self, **arrays: Any) -> QTensor:
        """The same tensor with some arrays replaced (e.g. by device copies)."""
        return replace(self, **arrays)

    def describe(self) -> str:
        extra = "nested" if self.nested else (self.scale_mode or "")
        return f"{self.format.name}[{'x'.join(map(str, self.shape))}] bs{self.blocksize} {extra}".strip()

    # ---- interop: bitsandbytes ----
    @classmethod
    def from_bnb(cls, packed: Any, state: Any) -> QTensor:
        """Wrap bitsandbytes' packed codes and QuantState (4-bit or 8-bit blockwise), no copy.

        Torch tensors stay torch tensors; the QuantState's code tables must be the ones in the
        format table (qkgen bakes them into the kernels).
        """
        quant_type = getattr(state, "quant_type", None)
        name = quant_type if quant_type in ("nf4", "fp4") else "blockwise8"
        fmt = F.get(name)
        _check_code(fmt.table, state.code, "state.code")
        # bnb's 8-bit QuantState has no shape; its packed codes keep the input's shape.
        shape = tuple(int(s) for s in (state.shape if state.shape is not None else packed.shape))
        kw: dict[str, Any] = {}
        if getattr(state, "nested", False):
            s2 = state.state2
            _check_code(fmt.nested_table, s2.code, "state.state2.code")
            if int(s2.blocksize) != fmt.nested_block:
                raise QKGenValueError(
                    f"state.state2.blocksize: {s2.blocksize} is not supported; allowed: {fmt.nested_block}"
                )
            kw = dict(absmax_q=state.absmax, absmax2=s2.absmax, offset=float(state.offset))
        else:
            kw = dict(absmax=state.absmax)
        return cls(format=fmt, shape=shape, data=packed.reshape(-1), blocksize=int(state.blocksize), **kw)

    def to_bnb(self) -> tuple[Any, Any]:
        """(packed, QuantState) for bitsandbytes; needs torch and bitsandbytes, shares memory."""
        import torch
        from bitsandbytes.functional import QuantState

        fmt = self.format
        if fmt.family not in ("bnb4", "bnb8"):
            raise QKGenValueError(f"format: {fmt.name} has no bitsandbytes form; allowed: nf4, fp4, blockwise8")
        t = lambda a: a if isinstance(a, torch.Tensor) else torch.from_numpy(np.asarray(a))  # noqa: E731
        code = torch.tensor(fmt.table, dtype=torch.float32)
        kw: dict[str, Any] = dict(code=code, blocksize=self.blocksize, dtype=torch.float32)
        if fmt.family == "bnb4":
            kw.update(shape=torch.Size(self.shape), quant_type=fmt.name)
        if self.nested:
            state2 = QuantState(
                absmax=t(self.absmax2), code=torch.tensor(fmt.nested_table, dtype=torch.float32),
                blocksize=fmt.nested_block, dtype=torch.float32,
            )  # fmt: skip
            kw.update(absmax=t(self.absmax_q), state2=state2,
                      offset=torch.tensor(self.offset, dtype=torch.float32))  # fmt: skip
        else:
            kw.update(absmax=t(self.absmax))
        packed = t(self.data)
        if fmt.family == "bnb4":
            packed = packed.reshape(-1, 1)
        return packed, QuantState(**kw)

    # ---- interop: GGUF ----
    @classmethod
    def from_gguf(cls, blocks: Any, format: str, shape: tuple[int, ...]) -> QTensor:
        """Wrap GGUF block bytes (a u8 array, e.g. a gguf reader's tensor.data viewed as u8), no copy."""
        fmt = F.get(format)
        if not fmt.inline:
            raise QKGenValueError(f"format: {fmt.name} is not a GGUF block format; allowed: "
                                  f"{', '.join(f.name for f in F.ROWS if f.inline)}")  # fmt: skip
        shape = tuple(int(s) for s in shape)
        qt = cls(format=fmt, shape=shape, data=blocks, blocksize=fmt.block)
        validate(qt)
        return qt

    def to_gguf(self) -> Any:
        """The GGUF block bytes (the same array, reshaped to [..., row bytes] where possible)."""
        if not self.format.inline:
            raise QKGenValueError(f"format: {self.format.name} has no GGUF form")
        return self.data


def _check_code(table: tuple[float, ...] | None, code: Any, name: str) -> None:
    got = np.asarray(code.detach().cpu().numpy() if hasattr(code, "detach") else code, dtype=np.float32)
    if table is None or got.shape != (len(table),) or not np.array_equal(got, np.float32(table)):
        raise QKGenValueError(f"{name}: a custom code table is not supported; allowed: the format table's code")


def _nbytes_of(a: Any) -> int:
    nb = getattr(a, "nbytes", None)
    if nb is None and hasattr(a, "numel"):
        nb = a.numel() * a.element_size()
    return int(nb)


def _dtype_of(a: Any) -> str:
    dt = getattr(a, "dtype", None)
    return str(dt).replace("torch.", "")


def validate(qt: QTensor) -> None:
    """Raise QKGenValueError if qt's arrays do not fit its shape and format."""
    fmt = qt.format
    F.check_blocksize(fmt, qt.blocksize)
    if any(s <= 0 for s in qt.shape) or not qt.shape:
        raise QKGenValueError(f"shape: {qt.shape} must be a non-empty tuple of positive sizes")
    if fmt.inline and qt.n % fmt.block:
        raise QKGenValueError(
            f"shape: {qt.shape} has {qt.n} elements; {fmt.name} needs a multiple of {fmt.block}"
        )
    expect = {"data": ("uint8", qt.data_bytes)}
    if fmt.family in ("bnb4", "bnb8"):
        if qt.nested:
            expect.update(absmax_q=("uint8", qt.nblocks), absmax2=("float32", 4 * -(-qt.nblocks // fmt.nested_block)))
            if qt.offset is None:
                raise QKGenValueError("offset: nested statistics need the f32 offset")
        elif qt.absmax is None:
            raise QKGenValueError("absmax: bitsandbytes formats need absmax (or nested statistics)")
        else:
            expect["absmax"] = ("float32", 4 * qt.nblocks)
    if fmt.family == "int":
        if qt.scale_mode not in fmt.scale_modes:
            raise QKGenValueError(f"scale_mode: {qt.scale_mode!r}; allowed: {', '.join(fmt.scale_modes)}")
        count = {"tensor": 1, "row": qt.rows, "group": qt.rows * qt.groups_per_row}[qt.scale_mode]
        expect["scale"] = ("float32", 4 * count)
    for name, (dtype, nbytes) in expect.items():
        a = getattr(qt, name)
        if a is None:
            raise QKGenValueError(f"{name}: missing for {fmt.name}")
        if _dtype_of(a) != dtype:
            raise QKGenValueError(f"{name}: dtype {_dtype_of(a)}; allowed: {dtype}")
        if _nbytes_of(a) != nbytes:
            raise QKGenValueError(f"{name}: {_nbytes_of(a)} bytes, but {qt.describe()} needs {nbytes}")
