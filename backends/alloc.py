"""The one allocation-size check: a buffer over the device's largest allocation gets a clear error
naming that limit, not the runtime's INVALID_BUFFER_SIZE or a failed USM allocation."""

from __future__ import annotations

from ..errors import QKGenValueError


def check_alloc(nbytes: int, limit: int | None, what: str, device: str, limit_name: str) -> None:
    """Raise QKGenValueError when `nbytes` of `what` exceed `limit` (None: no known limit)."""
    if limit and nbytes > limit:
        raise QKGenValueError(f"{what}: {nbytes} bytes; allowed: at most {limit} bytes, the largest single "
                              f"allocation of {device} ({limit_name})")  # fmt: skip
