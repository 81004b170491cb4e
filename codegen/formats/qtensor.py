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

from ..errors import QKGenValueError
from .row import Format

__all__ = ["QTensor", "validate"]


@dataclass(frozen=True)
class QTensor:
    format: Format
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

    # ---- interop: the family that has a foreign form does the work ----
    @classmethod
    def from_bnb(cls, packed: Any, state: Any) -> QTensor:
        """Wrap bitsandbytes' packed codes and QuantState (4-bit or 8-bit blockwise), no copy.
        Torch tensors stay torch tensors; the QuantState's code tables must be the format table's."""
        from ..errors import QKGenValueError
        from .family import family_of
        from .registry import get

        quant_type = getattr(state, "quant_type", None)
        if quant_type not in (None, "nf4", "fp4"):
            raise QKGenValueError(f"state.quant_type: {quant_type!r}; allowed: nf4, fp4 (4-bit) or none (8-bit)")
        return family_of(get(quant_type or "blockwise8")).from_bnb(packed, state)

    def to_bnb(self) -> tuple[Any, Any]:
        """(packed, QuantState) for bitsandbytes; needs torch and bitsandbytes, shares memory."""
        from .family import family_of

        return family_of(self.format).to_bnb(self)

    @classmethod
    def from_gguf(cls, blocks: Any, format: Any, shape: tuple[int, ...]) -> QTensor:
        """Wrap GGUF block bytes (u8, flat or [rows, row bytes]) in torch order [N, K], no copy.
        format: a qkgen name, a GGUF type name ("Q4_1") or a GGMLQuantizationType."""
        from .family import family_of
        from .registry import get

        fmt = get(format)
        return family_of(fmt).from_gguf(blocks, fmt, shape)

    def to_gguf(self) -> Any:
        """The GGUF block bytes as [rows, row bytes] (the same memory)."""
        from .family import family_of

        return family_of(self.format).to_gguf(self)

    # ---- placement: arrays on a device and back ----
    def to(self, backend: str | None = None, device: Any = None) -> QTensor:
        """The same tensor with every array copied onto a device (backend/device picked as in
        qkgen.dequantize): later calls use it there without uploading it again."""
        from ..interop.device import move

        validate(self)
        return self.with_arrays(**move(self.arrays(), backend, device))

    def to_host(self) -> QTensor:
        """The same tensor with numpy arrays (copied from a device where they live on one)."""
        from ..interop.device import to_host

        return self.with_arrays(**to_host(self.arrays()))

    def take_rows(self, index: Any) -> QTensor:
        """A new host tensor whose row r is row index[r] of this one (a row permutation or a
        selection; shape [len(index), K]). Rows must own whole blocks and bytes: inline blocks,
        or a K that is a multiple of the block (absmax) and of a byte's codes; nested statistics
        are shared across rows and cannot be permuted."""
        from ..interop.device import to_host

        validate(self)
        if len(self.shape) != 2:
            raise QKGenValueError(f"shape: {self.shape}; allowed for take_rows: a 2-D weight [N, K]")
        idx = np.asarray(index)
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= self.rows:
            raise QKGenValueError(f"index: allowed: a non-empty 1-D integer array of row numbers in 0..{self.rows - 1}")
        k = self.cols
        if self.nested or (self.absmax is not None and k % self.blocksize) or (k * self.format.low_bits) % 8:
            raise QKGenValueError(f"qtensor: {self.describe()} with K={k} has statistics or code bytes shared "
                                  "across rows; allowed for take_rows: inline blocks, or plain statistics with K "
                                  "a multiple of the block size and of a byte's codes")  # fmt: skip
        host = to_host(self.arrays())
        out = {name: a if name == "scale" and self.scale_mode == "tensor"
               else np.ascontiguousarray(a.reshape(self.rows, -1)[idx]).reshape(-1) for name, a in host.items()}
        if self.scale_mode == "group":
            out["scale"] = out["scale"].reshape(idx.size, -1)
        return replace(self, shape=(int(idx.size), k), **out)


def _nbytes_of(a: Any) -> int:
    nb = getattr(a, "nbytes", None)
    if nb is None and hasattr(a, "numel"):
        nb = a.numel() * a.element_size()
    return int(nb)


def _dtype_of(a: Any) -> str:
    dt = getattr(a, "dtype", None)
    return str(dt).replace("torch.", "")


def validate(qt: QTensor) -> None:
    """Raise QKGenValueError if qt's arrays do not fit its shape and format (and nothing else)."""
    from .family import family_of
    from .registry import check_blocksize

    fmt = qt.format
    if not isinstance(fmt, Format):
        raise QKGenValueError(f"format: {type(fmt).__name__}; allowed: a qkgen.formats.Format")
    check_blocksize(fmt, qt.blocksize)
    shape = qt.shape
    if not isinstance(shape, tuple) or not shape or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s > 0 for s in shape
    ):  # fmt: skip
        raise QKGenValueError(f"shape: {shape!r}; allowed: a non-empty tuple of positive ints")
    expect = family_of(fmt).expected_arrays(qt)
    for name, (dtype, nbytes) in expect.items():
        a = getattr(qt, name)
        if a is None:
            raise QKGenValueError(f"{name}: missing for {qt.describe()}")
        if _dtype_of(a) != dtype:
            raise QKGenValueError(f"{name}: dtype {_dtype_of(a)}; allowed: {dtype}")
        if _nbytes_of(a) != nbytes:
            raise QKGenValueError(f"{name}: {_nbytes_of(a)} bytes, but {qt.describe()} needs {nbytes}")
    extra = sorted(set(qt.arrays()) - set(expect))
    if extra:
        raise QKGenValueError(f"{extra[0]}: not part of {qt.describe()}; allowed arrays: {', '.join(expect)}")
