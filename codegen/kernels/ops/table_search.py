"""How the quantizer kernels find the code of a value in a table (the "nearest" and "lookup" rules):
the count of sorted f32 keys below it (or at or below it), by a search tree whose keys lie in
breadth-first order, so that each level's keys sit side by side in local memory (distinct banks;
a sorted array's binary search sends the lanes of a level to keys a power of two apart, one bank).

"nearest": the keys are the sorted table's f32 midpoints, a value counts those below it.
"lookup": bitsandbytes' 65536-step table (formats.bnb8.lookup_codes) is a non-decreasing function of
c = clamp(x / absmax, -1, 1), so code(c) is the count of cuts at or below c, cut k being the least
f32 c whose code is k or more: found by bisection over the ordered f32 values of [-1, 1], from the
reference itself. The grid step, its rounding and the table walk vanish from the kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...formats.bnb8 import lookup_codes

_F32 = np.float32
NEVER = 2.0  # the cut of a code no c in [-1, 1] reaches: above every c (and false against NaN)


@dataclass(frozen=True)
class Buckets:
    """A shorter way to the lookup rule's count, for a kernel that scales c first: c's bucket b from
    its bits (a = |c|'s bits clamped to [lo, hi], b = (a - lo) >> shift, plus `half` where c < 0) gives
    u0 = starts[b], the number of distinct cuts below every c of the bucket; at most `probes` distinct
    cuts lie inside it, so u = u0 + #{t < probes: ucuts[u0 + t] <= c} is the number of distinct cuts
    at or below c, and below[u] the number of cuts, repeats counted. ucuts ends in `probes` NEVERs and
    below in `probes` copies of its last count, so no read leaves them (c = inf: 255; NaN: never
    asked, the kernel makes it -1 first)."""

    lo: int
    hi: int
    shift: int
    half: int
    probes: int
    starts: tuple[int, ...]
    ucuts: tuple[float, ...]
    below: tuple[int, ...]


def _bucket_ranges(lo: int, hi: int, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """The least and greatest magnitude (as f32 bits) of each bucket of one sign: bucket 0 also holds
    every magnitude below lo, the last one every magnitude from hi on (inf and NaN bits included)."""
    half = ((hi - lo) >> shift) + 1
    b = np.arange(half, dtype=np.int64)
    least = np.where(b == 0, 0, lo + (b << shift))
    most = np.where(b == half - 1, 0x7F800000, lo + ((b + 1) << shift) - 1)
    return least, most


@functools.lru_cache(maxsize=None)
def buckets(keys: tuple[float, ...], probes: int = 3) -> Buckets | None:
    """Buckets of the fewest mantissa bits that leave at most `probes` distinct cuts a bucket; None
    where even 8 bits do not (the tree then)."""
    k = np.asarray(keys, _F32)
    u = np.unique(k[k < NEVER])
    mult = np.array([np.count_nonzero(k == c) for c in u])
    below = np.concatenate([[0], np.cumsum(mult)])
    lo = int(((np.abs(u).view(np.uint32).min() >> 23) - 1) << 23)  # an exponent under every cut's
    hi = 128 << 23  # 2.0: magnitudes from there on share the last bucket
    for bits in range(1, 9):
        shift = 23 - bits
        least, most = _bucket_ranges(lo, hi, shift)
        half = least.size
        ranges = [(_ordered(least), _ordered(most)), (_ordered(-most), _ordered(-least))]  # c >= 0, c < 0
        starts, inside = [], []
        for low, high in ranges:
            starts.append(np.searchsorted(u, low, side="left"))
            inside.append(np.searchsorted(u, high, side="right") - starts[-1])
        if max(int(i.max()) for i in inside) <= probes and below[-1] < 256:
            return Buckets(lo, hi, shift, half, probes, tuple(int(x) for x in np.concatenate(starts)),
                           tuple(float(c) for c in u) + (NEVER,) * probes,
                           tuple(int(b) for b in below) + (int(below[-1]),) * probes)  # fmt: skip
    return None


@dataclass(frozen=True)
class Search:
    """keys: sorted, 2^levels - 1 of them; strict: count keys below v ("<"), else at or below ("<=");
    order: the code of each sorted slot where the table is not sorted (FP4: +0 before -0, stable)."""

    keys: tuple[float, ...]
    strict: bool
    order: tuple[int, ...] | None
    pad: int  # the code of 0.0 (a padding slot of the last byte)

    @property
    def levels(self) -> int:
        return len(self.keys).bit_length()

    @property
    def tree(self) -> tuple[float, ...]:
        """The keys in breadth-first order: node j's children are 2j + 1 and 2j + 2, the leaves after
        the last level, j - (2^levels - 1), count the keys the search went right of."""
        out: list[float] = [0.0] * len(self.keys)
        it = iter(self.keys)

        def fill(j: int) -> None:  # in-order walk: the sorted keys land on the tree's nodes in order
            if j < len(out):
                fill(2 * j + 1)
                out[j] = next(it)
                fill(2 * j + 2)

        fill(0)
        return tuple(out)

    @property
    def buckets(self) -> Buckets | None:
        """The lookup rule's bucketed count (None for "nearest": its trees are 4 levels)."""
        return None if self.strict else buckets(self.keys)

    @property
    def order_bits(self) -> int:
        """order packed 4 bits an entry, entry 0 lowest (tables of up to 16 entries)."""
        assert self.order is not None and len(self.order) <= 16
        return sum(c << (4 * i) for i, c in enumerate(self.order))

    def count(self, v: np.ndarray) -> np.ndarray:
        """What the kernel's search gives for f32 values v (a test's oracle of the tree)."""
        v = np.asarray(v, _F32)
        n = np.searchsorted(np.asarray(self.keys, _F32), v, side="left" if self.strict else "right")
        return np.where(np.isnan(v), 0, n)  # every comparison with NaN is false: the search goes left


def bucket_count(b: Buckets, c: np.ndarray) -> np.ndarray:
    """What the kernel's bucketed count gives for f32 c (a test's oracle of the buckets)."""
    c = np.asarray(c, _F32)
    bits = c.view(np.uint32).astype(np.int64)
    a = np.clip(bits & 0x7FFFFFFF, b.lo, b.hi)
    at = ((a - b.lo) >> b.shift) + (bits >> 31) * b.half
    u = np.asarray(b.starts)[at]
    ucuts = np.asarray(b.ucuts, _F32)
    u = u + sum((ucuts[u + t] <= c).astype(np.int64) for t in range(b.probes))
    return np.asarray(b.below)[u]


def _ordered(key: np.ndarray) -> np.ndarray:
    """The f32 value of an ordered integer key (key >= 0: the bits of a value >= 0; key < 0: -key the
    bits of its magnitude, negative)."""
    bits = np.where(key >= 0, key, (-key) | 0x80000000).astype(np.uint32)
    return bits.view(_F32)


@functools.lru_cache(maxsize=None)
def lookup_cuts(table: tuple[float, ...]) -> tuple[float, ...]:
    """Cut k (k = 1 .. len(table) - 1): the least f32 c in [-1, 1] with lookup_codes(c) >= k."""
    one = int(np.float32(1).view(np.uint32))
    k = np.arange(1, len(table))
    lo = np.full(k.size, -one, np.int64)  # c = -1
    hi = np.full(k.size, one + 1, np.int64)  # one past c = 1: "none"
    while np.any(lo < hi):  # least key in [lo, hi) whose code is k or more
        mid = (lo + hi) // 2
        up = lookup_codes(_ordered(np.minimum(mid, one)), table) >= k
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid + 1)
    cuts = np.where(lo <= one, _ordered(np.minimum(lo, one)), _F32(NEVER))
    assert np.all(np.diff(cuts) >= 0)
    return tuple(float(c) for c in cuts)


@functools.lru_cache(maxsize=None)
def search(table: tuple[float, ...], lookup: bool = False) -> Search:
    t = np.asarray(table, dtype=_F32)
    order = np.argsort(t, kind="stable")
    mids = (t[order[:-1]] + t[order[1:]]) / _F32(2)
    assert len(table) & (len(table) - 1) == 0, len(table)
    pad = int(order[np.searchsorted(mids, _F32(0), side="left")])
    ident = bool(np.all(order == np.arange(len(order))))
    keys = lookup_cuts(table) if lookup else tuple(float(m) for m in mids)
    return Search(keys, not lookup, None if ident else tuple(int(o) for o in order), pad)
