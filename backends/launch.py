"""Launch geometry and argument lists shared by every backend: 1-, 2- or 3-D global and local sizes,
checked once; a warm launch's argument list, its changing positions filled at each call."""

from __future__ import annotations

import numpy as np

from ..errors import QKGenValueError


def _dims(value, name: str) -> tuple[int, ...]:
    if type(value) is tuple and 0 < len(value) <= 3 and all(type(v) is int and v > 0 for v in value):
        return value  # the common case (plans' geometry), without numpy's isinstance checks
    items = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        dims = tuple(items)
    except TypeError:
        dims = None
    if (
        not dims
        or len(dims) > 3
        or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v <= 0 for v in dims)
    ):
        raise QKGenValueError(f"{name}: {value!r}; allowed: a positive int or a tuple of 1 to 3 "
                              "positive ints")  # fmt: skip
    return tuple(int(v) for v in dims)


def launch_shape(global_size, local_size) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(global, local) as tuples of the same length (1..3), each global size a multiple of its
    local size, as OpenCL and SYCL nd-ranges require (CUDA launches global / local blocks)."""
    g, loc = _dims(global_size, "global_size"), _dims(local_size, "local_size")
    if len(g) != len(loc):
        raise QKGenValueError(f"local_size: {local_size!r} has {len(loc)} dimensions and global_size "
                              f"{global_size!r} has {len(g)}; allowed: the same number")  # fmt: skip
    for i, (gi, li) in enumerate(zip(g, loc)):
        if gi % li:
            raise QKGenValueError(f"global_size: {gi} in dimension {i} is not a multiple of local_size {li}; "
                                  "allowed: whole work-groups")  # fmt: skip
    return g, loc


def groups(global_size: tuple[int, ...], local_size: tuple[int, ...]) -> tuple[int, int, int]:
    """Work-groups per dimension, padded to three (CUDA's grid)."""
    n = [gi // li for gi, li in zip(global_size, local_size)]
    return tuple(n + [1] * (3 - len(n)))  # type: ignore[return-value]


def padded(sizes: tuple[int, ...]) -> tuple[int, int, int]:
    return tuple(list(sizes) + [1] * (3 - len(sizes)))  # type: ignore[return-value]


def arg_template(args: list, dynamic: tuple[int, ...]) -> list:
    """`args` with None at the changing positions: a launcher keeps this, and no call's buffers."""
    return [None if i in dynamic else a for i, a in enumerate(args)]


def filled(template: list, dynamic: tuple[int, ...], values: list) -> list:
    """A copy of `template` with `values` at the positions in `dynamic`, in order."""
    a = template.copy()
    for i, v in zip(dynamic, values):
        a[i] = v
    return a
