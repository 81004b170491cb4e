"""The allocation checks: a buffer over the device's largest allocation gets a clear error naming that
limit, not the runtime's INVALID_BUFFER_SIZE or a failed USM allocation; an output's shape must hold
its elements."""

from __future__ import annotations

import numpy as np

from ..errors import QKGenValueError


def check_alloc(nbytes: int, limit: int | None, what: str, device: str, limit_name: str) -> None:
    """Raise QKGenValueError when `nbytes` of `what` exceed `limit` (None: no known limit)."""
    if limit and nbytes > limit:
        raise QKGenValueError(f"{what}: {nbytes} bytes; allowed: at most {limit} bytes, the largest single "
                              f"allocation of {device} ({limit_name})")  # fmt: skip


def check_output_shape(shape: tuple | None, count: int) -> None:
    """Raise QKGenValueError when an output of `count` elements is asked for in a `shape` of another size."""
    if shape is not None and int(np.prod(shape)) != count:
        raise QKGenValueError(f"shape: {tuple(shape)} for an output of {count} elements; allowed: shapes of "
                              f"{count} elements")  # fmt: skip
