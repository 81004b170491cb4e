"""Every kernel qkgen generates: op x format x variant x dtype (x op parameters), as render()
keyword arguments, read from the op registry and the format families.

`qkgen dump --all`, `qkgen check`, the test suites and the CUDA compile matrix all enumerate
kernels here, so a new op, format or target is picked up everywhere by adding it in one place.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..formats import rows
from ..kernels.ops import OPS, get_op


def op_formats(op: str) -> tuple[str, ...]:
    """The formats an op takes."""
    return get_op(op).formats()


def variants(op: str | None = "dequantize", formats: list[str] | None = None,
             dtypes: tuple[str, ...] | None = None) -> Iterator[dict]:  # fmt: skip
    """render() keyword arguments of every kernel of `op` (every op when None), format given by
    name under "format" and the op under "op"."""
    for name in [op] if op else list(OPS):
        spec = get_op(name)
        if spec.format_free:  # one set of kernels whatever the row: listed once, under the first row
            if not formats:  # (entries are keyed by row); a listing for named formats leaves them out
                yield from ({"op": name, "format": rows()[0].name, **v} for v in spec.variants(None)
                            if dtypes is None or v["dtype"] in dtypes)  # fmt: skip
            continue
        for fmt in rows():
            if (formats and fmt.name not in formats) or not spec.accepts(fmt):
                continue
            for v in spec.variants(fmt):
                if dtypes is None or v["dtype"] in dtypes:
                    yield {"op": name, "format": fmt.name, **v}
