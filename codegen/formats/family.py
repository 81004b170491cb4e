"""Format families: what rows of one kind share, as one module of traits each.

A family module (bnb4, bnb8, gguf, plain_int, ...) subclasses Family once and registers it. It
owns every decision that depends on the kind of format: which row combinations are valid, the
statistics layouts (variants) a row has, what the block-size parameter is called, the kernel-name
parts, how far a decoded chunk may reach, the arrays and scalars a kernel reads, and the
reference quantizer. Nothing outside family modules asks which family a row belongs to.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import FormatError, QKGenValueError

if TYPE_CHECKING:
    from .qtensor import QTensor
    from .row import Format

FAMILIES: dict[str, Family] = {}


class Family:
    name: ClassVar[str]
    blocksize_arg: ClassVar[str] = "blocksize"  # what users call the block parameter
    sample_shape: ClassVar[tuple[int, int]] = (7, 333)  # `qkgen check`: odd sizes, partial blocks
    # bitsandbytes.functional / bitsandbytes functions that handle this family ("dequantize", "matmul",
    # "gemv"), for side-by-side benchmarks; empty where bitsandbytes has no kernel for it.
    bnb_functions: ClassVar[dict[str, str]] = {}

    # ---- rows ----
    def check_row(self, row: Format, need: Callable[[bool, str, str], None]) -> None:
        """Family rules on a row whose fields already passed their type checks."""

    # ---- variants: statistics layouts and their parameters ----
    def variants(self, fmt: Format) -> Iterator[dict]:
        """render()/quantize() keyword arguments of every statistics layout of fmt."""
        yield {}

    def variant_words(self, fmt: Format) -> dict[str, dict]:
        """Short names of the variants (`qkgen bench --formats nf4:nested`), first the default."""
        return {"": {}}

    def default_variant(self, fmt: Format) -> dict:
        """The layout used where none is named (the CLI's dump)."""
        return {}

    def check_variant(self, fmt: Format, nested: bool, scale_mode: str | None) -> None:
        if nested:
            raise QKGenValueError(f"nested: {fmt.name} has no nested statistics; allowed: formats with "
                                  "nested statistics (nf4, fp4)")  # fmt: skip
        if scale_mode is not None:
            raise QKGenValueError(f"scale_mode: only plain integer formats take one; got {scale_mode!r}")

    def name_parts(self, fmt: Format, blocksize: int, nested: bool, scale_mode: str | None) -> list[str]:
        """Kernel-name parts after the format's name: every variant that changes the kernel."""
        return ["nested", f"bs{blocksize}"] if nested else [f"bs{blocksize}"]

    # ---- kernels ----
    def chunk_limit(self, fmt: Format, blocksize: int, scale_mode: str | None) -> int:
        """Most elements a kernel may decode with one scale read (one block or group)."""
        return blocksize

    def weight_inputs(self, fmt: Format, nested: bool, scale_mode: str | None) -> list[tuple[str, str, str]]:
        """(name, kind, dtype) of the kernel arguments a weight contributes, in signature order:
        kind "in" for arrays (QTensor fields of that name), "scalar" for numbers."""
        raise NotImplementedError

    def launch_scalars(self, qt: QTensor) -> dict[str, Any]:
        """Values of the scalar weight inputs."""
        return {}

    # ---- host side ----
    def expected_arrays(self, qt: QTensor) -> dict[str, tuple[str, int]]:
        """name -> (dtype, bytes) of every array qt must hold."""
        raise NotImplementedError

    def element_scales(self, qt: QTensor, data: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(scale per element, additive min per element or None), flat float32."""
        raise NotImplementedError

    # ---- foreign forms: the family that has one overrides these ----
    def from_bnb(self, packed: Any, state: Any) -> QTensor:
        raise QKGenValueError(f"state: the {self.name} family has no bitsandbytes form")

    def to_bnb(self, qt: QTensor) -> tuple[Any, Any]:
        raise QKGenValueError(f"format: {qt.format.name} has no bitsandbytes form; allowed: nf4, fp4, blockwise8")

    def from_gguf(self, blocks: Any, fmt: Format, shape: Any) -> QTensor:
        raise QKGenValueError(f"format: {fmt.name} is not a GGUF block format")

    def to_gguf(self, qt: QTensor) -> Any:
        raise QKGenValueError(f"format: {qt.format.name} has no GGUF form")

    def quantize(self, x: np.ndarray, fmt: Format, blocksize: int | None, nested: bool, scale_mode: str | None,
                 group_size: int | None) -> QTensor:  # fmt: skip
        """The reference quantizer (bit-exact with the format's own library where one exists)."""
        raise NotImplementedError


def register_family(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family


def family_of(fmt: Format) -> Family:
    try:
        return FAMILIES[fmt.family]
    except KeyError:
        raise FormatError(f"format {fmt.name!r}: field 'family': {fmt.family!r}; allowed: "
                          f"{', '.join(FAMILIES)}") from None  # fmt: skip


