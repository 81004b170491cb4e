"""Reductions on a device whose results do not depend on the device: the exact mean of float32
values (the nested bitsandbytes offset), from the exact_sum kernel's integer bins.

The kernel leaves GROUPS x 17 int64 (68 KiB by default) where the host would otherwise read every
value back; the host adds them exactly (int64 halves, then Python ints) and rounds once
(codec.mean_from_bins), so the mean equals codec.exact_mean_f32 of the same values bit for bit, on
every backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import QKGenValueError
from ..formats.codec import EXACT_BINS, mean_from_bins
from ..kernels.ops.exact_sum import GROUPS, SLOTS, launch_sizes
from .plan import Plan


def device_exact_slots(dev, x: Any, n: int, groups: int = GROUPS, like: Any = None) -> np.ndarray:
    """The exact_sum kernel's output for the first n values of x, downloaded: [groups, 17] int64,
    each work-group's 16 bins and its count of non-finite values (ops/exact_sum.py).

    x: float32 values on dev: a numpy array (uploaded), an array of dev's backend, or
    plan.ready(buf) for a buffer an earlier launch wrote (quantize_stats' absmax). n: 1 .. 2^31 - 1
    (more is refused before anything runs); a numpy x must hold at least n values. like: a native
    array whose kind the slots take (a torch tensor: torch's caching allocator, where a driver
    allocation's free would synchronize the device at every call)."""
    if isinstance(x, np.ndarray) and x.size < n:
        raise QKGenValueError(f"n: {n}; x holds {x.size} values; allowed: at most {x.size}")
    plan = Plan.make(dev, "exact_sum", None)
    sizes = launch_sizes(n, plan.ks.wg, groups)
    ((buf, arr, _),) = plan.outputs(sizes, like=like).values()
    plan.launch({"x": x, "bins": buf}, sizes)
    return dev.download(arr, "i64", sizes["groups"] * SLOTS).reshape(-1, SLOTS)


def device_exact_mean(dev, x: Any, n: int, groups: int = GROUPS, like: Any = None) -> np.float32:
    """The float32 nearest (ties to even) to the exact mean of the first n float32 values of x on
    dev: equal to codec.exact_mean_f32 of them, bit for bit, whatever the device. x and n as
    device_exact_slots takes them; a non-finite value is refused (QKGenValueError) without
    reading x back."""
    slots = device_exact_slots(dev, x, n, groups, like)
    # A group's slot is below 2^63, their sum over groups may not be: each slot's high 32 bits (signed)
    # and low 32 bits are summed apart in int64 (fewer than 2^31 groups: no overflow), then joined as
    # Python ints
    hi = (slots >> 32).sum(axis=0)
    lo = (slots & 0xFFFFFFFF).sum(axis=0)
    totals = [(int(h) << 32) + int(v) for h, v in zip(hi, lo)]
    bad = totals[EXACT_BINS]
    if bad:
        raise QKGenValueError(f"x: {bad} of its {n} values are not finite; allowed: finite values")
    return mean_from_bins(totals[:EXACT_BINS], n)
