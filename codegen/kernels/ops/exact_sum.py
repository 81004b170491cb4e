"""exact_sum: float32 values -> per work-group integer bins whose total is their exact sum.

The nested bitsandbytes offset is the mean of the block absmax (formats.codec.exact_mean_f32: the
float32 nearest to the exact mean). A float sum depends on its order, and Intel Arc GPUs have no
float64; integers do not care about order. A finite float32 is m * 2^s units of 2^-149 (m its
24-bit significand, s in 0..253), so each work-group adds +-(m << (s & 15)) into bin s >> 4 of 16
signed 64-bit bins, and the host adds the groups' bins exactly and rounds once
(codec.mean_from_bins): the same float32 on every device and on the host.

Slot 16 of a group counts its non-finite values (left out of the bins), so a caller learns that
the input was not finite without reading it back.

Bounds: a term is below 2^39 ((2^24 - 1) << 15); a group takes fewer than 2^24 values
(MAX_PER_GROUP), so its bins stay below 2^63. n is below 2^31 (uint offsets never wrap).

This op reads no format row (OpSpec.format_free): every op is keyed by a row, and this one is
about float32 values, not a format. Rather than tie it to the rows that use it (nf4, fp4: two
identical kernels, named after a row and a block size that change nothing), render() takes format
None (or any row, ignored), the kernel is named exact_sum_f32 and the catalog lists it once.
"""

from __future__ import annotations

import numpy as np

from ...errors import QKGenValueError
from ...formats.codec import EXACT_BINS, f32_bins
from ..source import Arg
from .spec import LOCAL_BYTES, OpSpec, Output, Request

SLOTS = EXACT_BINS + 1  # a group's 16 bins, then its count of non-finite values
MAX_N = (1 << 31) - 1  # values one launch takes: uint offsets, i + wg never wraps
MAX_PER_GROUP = (1 << 24) - 1  # values a group takes: its bins stay below 2^63
GROUPS = 512  # work-groups by default (64 left an H100 idle: 54 µs for 917K values); GROUPS * SLOTS int64 (68 KiB) come back
# the widest power-of-two work-group whose slots (SLOTS int64 a work-item) fit static local memory
MAX_WG = 1 << ((LOCAL_BYTES // (SLOTS * 8)).bit_length() - 1)


def launch_sizes(n: int, wg: int, groups: int = GROUPS) -> dict:
    """The launch sizes for n values: per_group (a multiple of wg, so every group's range starts
    aligned), the group count and n. At most `groups` groups, more where a group would otherwise
    take MAX_PER_GROUP values or more."""
    for name, v, hi in (("n", n, MAX_N), ("groups", groups, 1 << 16)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi:
            raise QKGenValueError(f"{name}: {v!r}; allowed: an int in 1..{hi}")
    n = int(n)
    per_group = -(-n // (int(groups) * wg)) * wg  # ceil(n / groups), rounded up to whole wg
    per_group = min(per_group, MAX_PER_GROUP // wg * wg)
    return {"n": n, "per_group": per_group, "groups": -(-n // per_group)}


def group_slots(x, per_group: int) -> np.ndarray:
    """The reference output: [groups, SLOTS] int64, each group's bins (codec.f32_bins of its
    range of x) and its non-finite count."""
    x = np.asarray(x, dtype=np.float32).reshape(-1)
    out = []
    for at in range(0, x.size, per_group):
        bins, nonfinite = f32_bins(x[at : at + per_group])
        out.append([*bins, nonfinite])
    return np.array(out, dtype=np.int64).reshape(-1, SLOTS)


def _context(req: Request) -> dict:
    wg = req.pop_wg(128, 1)
    if wg > MAX_WG:
        raise QKGenValueError(f"wg: {wg}; allowed: a power of two up to {MAX_WG} (each work-item keeps "
                              f"{SLOTS} int64 slots in local memory)")  # fmt: skip
    args = [Arg("x", "in", "f32"), Arg("bins", "out", "i64"), Arg("n", "scalar", "u32"),
            Arg("per_group", "scalar", "u32"), Arg("part", "local", "i64", count=SLOTS * wg)]  # fmt: skip
    return dict(args=args, bins=EXACT_BINS, slots=SLOTS, wg=wg)


def _grid(ks, sizes: dict):
    return (sizes["groups"] * ks.wg,), (ks.wg,)


SPEC = OpSpec(
    name="exact_sum", template="exact_sum.jinja",
    doc="f32 values -> per work-group integer bins of their exact sum (the nested offset's mean)",
    context=_context, grid=_grid, dtypes=("f32",), format_free=True,
    outputs=(Output("bins", "i64", lambda s: s["groups"] * SLOTS),),
    reference=lambda x, per_group: group_slots(x, per_group),
)  # fmt: skip
