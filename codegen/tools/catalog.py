"""Every kernel qkgen generates: op x format x dtype x variant, as render() keyword arguments.

`qkgen dump --all`, `qkgen check`, the test suites and the CUDA compile matrix all enumerate
kernels here, so a new op or format is picked up everywhere by adding it in one place.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import formats as F
from .dialects import DTYPES


def format_variants(fmt: F.Format) -> Iterator[dict]:
    """Statistics layouts of a format: nested or not; scale per tensor, row or group."""
    if fmt.family == "int":
        for mode in fmt.scale_modes:
            yield {"scale_mode": mode, "blocksize": 64 if mode == "group" else None}
    elif fmt.nestable:
        yield {"nested": False}
        yield {"nested": True}
    else:
        yield {}


def op_formats(op: str) -> tuple[str, ...] | None:
    """The formats an op takes where it takes only some (None: every row). The integer-dot path:
    quantize_q8_1 writes q8_1 blocks, gemv_int8dot reads GGUF weights q4_0 ... q8_0."""
    from .render import INT8DOT_FORMATS, Q8_1_FORMATS

    return {"quantize_q8_1": Q8_1_FORMATS, "gemv_int8dot": INT8DOT_FORMATS}.get(op)


def variants(op: str = "dequantize", formats: list[str] | None = None, dtypes: tuple[str, ...] = DTYPES) -> Iterator[dict]:
    """render() keyword arguments for every kernel of `op` (format given as a name)."""
    only = op_formats(op)
    for fmt in F.ROWS:
        if formats and fmt.name not in formats:
            continue
        if only is not None and fmt.name not in only:
            continue
        for var in format_variants(fmt):
            for dtype in dtypes:
                yield {"op": op, "format": fmt.name, "dtype": dtype, **var}
