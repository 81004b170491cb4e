"""How the quantizer kernels find the code of a value in a table (the "nearest" and "lookup" rules):
the count of sorted f32 keys below it (or at or below it), by a search tree whose keys lie in
breadth-first order, so that each level's keys sit side by side in local memory (distinct banks;
a sorted array's binary search sends the lanes of a level to keys a power of two apart, one bank).

"nearest": the keys are the sorted table's f32 midpoints, a value counts those below it.
"lookup": bitsandbytes' 65536-step table (formats.bnb8.lookup_codes) is a non-decreasing function of
c = clamp(x / absmax, -1, 1), so code(c) is the count of cuts at or below c, cut k being the least
f32 c whose code is k or more: found by bisection over the ordered f32 values of [-1, 1], from the
reference itself. The grid step, its rounding and the table walk vanish from the kernel.

Buckets (the "nearest" rule of a small table): c in [-1, 1] falls in bucket round(S c - h) + S + 1,
found as the low bits of f32(f32(S c - h) + 1.5 * 2^23 + S + 1) (S c is exact; h is 0 or 1/2, a grid
of bucket centres or of bucket edges on the multiples of 1/S; the 1 keeps -1 - 2^-23 off bucket -1).
The bucket is monotone in c, so the count of keys below c is BASE[b] (the keys of the buckets before
b) plus one for each of the next R sorted keys (padded with FLT_MAX) below c: they are the bucket's
own keys, or keys of later buckets, above c. S, h and R: the first of BUCKET_SHAPES that leaves at
most R keys in any bucket. A read, R dependent reads and R comparisons in place of a walk down the
tree, a read and a dependent address a level. The count is exact for c within one rounding of
[-1, 1], which is every c of a finite x (|x| <= absmax, 1 / absmax finite). Whatever c is, no value
reads past the tables: BASE is padded to a power of two and the bucket masked to it, and the pad is
below no finite c, so the count stays within 0 .. 15 (a NaN or infinite c comes only from a
non-finite x, which the kernels' status reports and the host refuses). nf4: 16 buckets a unit on
centres, one key each. fp4: its keys -1/384, 0 and 1/384 share a bucket on centres at any scale up
to 128 (on edges 0 and 1/384 share one up to 256): 256 buckets a unit on centres, one key each (a
1 KB byte table; 16 on edges with two keys took a read and a compare more a value: NVIDIA H200,
run 215, fp4 f16 x 58.5 against 56.4 us, docs/bench/2026-12-03-h200-session42.md).

Log buckets (the "lookup" rule: 255 cuts, crowded near 0 as bitsandbytes' dynamic map is): c falls
in a bucket by the bits of |c| and its sign, off = max(|c|, LO) - LO and step = off >> SHIFT as
integers, so a bucket spans a fixed share of a binade, and every |c| below LO shares its sign's
bucket. Negative c take buckets TOP - step, positive ones TOP + 1 + step (step clamped to TOP):
monotone in c. SHIFT is the widest leaving at most one key in a bucket past its least c, so one
integer read decides: the entry holds the keys at or below the bucket's least c (keys equal to it,
the dynamic map's eight equal cuts at -2^-25, cost nothing) shifted up SHIFT bits, plus 2^SHIFT - t,
t the rank (off's low SHIFT bits, complemented for c < 0 so that it grows with c) of the bucket's one
other key. Adding c's rank carries into bit SHIFT exactly when that key lies at or below c. LO's
low bit set puts a bucket's edge one float past a power of two, where those cuts lie. The last step
takes every |c| past 1 and a little (only an infinite c: a value over an absmax of 2^-128 or less), which
counts as +-1 does. blockwise8: LO = 2^-26 + 1 bit, SHIFT 17 (64 buckets a binade), 3332 entries.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ...formats.bnb8 import lookup_codes

_F32 = np.float32
NEVER = 2.0  # the cut of a code no c in [-1, 1] reaches: above every c (and false against NaN)
# (S buckets a unit of c, h the grid's shift, R the most keys a bucket), tried in turn
BUCKET_SHAPES = ((16, 0.0, 1), (32, 0.0, 1), (64, 0.0, 1), (16, 0.5, 1), (32, 0.5, 1), (64, 0.5, 1),
                 (128, 0.0, 1), (256, 0.0, 1), (16, 0.0, 2), (16, 0.5, 2))  # fmt: skip
PAD = float(np.finfo(np.float32).max)  # the bucket search's key past the last: below no finite c
MAGIC = 12582912.0  # 1.5 * 2^23: f32(v + MAGIC) holds round(v), ties to even, in its low bits (|v| < 2^22)


@dataclass(frozen=True)
class Buckets:
    """scale S, shift h, per R: bucket b of c = the low bits of f32(f32(S c - h) + offset) under mask,
    as the kernels compute it; base[b] (mask + 1 of them): the keys below bucket b; keys: the sorted
    keys, then R PAD."""

    scale: int
    shift: float
    per: int
    base: tuple[int, ...] = ()
    keys: tuple[float, ...] = ()
    kind: str = "linear"

    @property
    def offset(self) -> float:
        """MAGIC + S + 1, exact in f32: added to S c - h, it leaves round(S c - h) + S + 1 in the low bits."""
        return MAGIC + self.scale + 1

    @property
    def mask(self) -> int:
        return (1 << (2 * self.scale + 1).bit_length()) - 1  # buckets 0 .. 2S + 2, rounded up to a power of two

    def index(self, v: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            t = (np.asarray(v, _F32) * _F32(self.scale) - _F32(self.shift)).astype(_F32) + _F32(self.offset)
        return (t.astype(_F32).view(np.uint32) & np.uint32(self.mask)).astype(np.int64)

    def count(self, v: np.ndarray) -> np.ndarray:
        """What the kernel's bucket search gives for f32 values v."""
        lo = np.asarray(self.base)[self.index(v)]
        keys, v = np.asarray(self.keys, _F32), np.asarray(v, _F32)
        return lo + sum((keys[lo + r] < v).astype(np.int64) for r in range(self.per))


@dataclass(frozen=True)
class LogBuckets:
    """lo, shift: off(c) = max(bits |c|, lo) - lo, step = off >> shift clamped to top; bucket = top -
    step for c with the sign bit set, else top + 1 + step. rank(c): off's low `shift` bits, complemented
    for c < 0, so that within a bucket rank grows with c. entries[b] = (base << shift) + 2^shift - t:
    base the keys at or below the bucket's least c, t the rank from which its one other key counts
    (2^shift: none). The count is (entries[b] + rank) >> shift: the low part carries into bit `shift`
    exactly when rank >= t."""

    lo: int
    shift: int
    top: int
    entries: tuple[int, ...] = ()
    kind: str = "log"

    @property
    def rank_mask(self) -> int:
        return (1 << self.shift) - 1

    @property
    def lo_f32(self) -> float:
        """lo as the f32 whose bits it is (a normal float)."""
        return float(np.uint32(self.lo).view(_F32))

    def _off(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(c < 0, off) as the kernels compute them."""
        bits = np.asarray(v, _F32).view(np.uint32).astype(np.int64)
        return bits >> 31 == 1, np.maximum(bits & 0x7FFFFFFF, self.lo) - self.lo

    def _parts(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        neg, off = self._off(v)
        step = np.minimum(off >> self.shift, self.top)
        return np.where(neg, self.top - step, self.top + 1 + step), np.where(neg, ~off, off) & self.rank_mask

    def index(self, v: np.ndarray) -> np.ndarray:
        return self._parts(v)[0]

    def rank(self, v: np.ndarray) -> np.ndarray:
        return self._parts(v)[1]

    def least(self) -> np.ndarray:
        """The least f32 c of every bucket (-inf for bucket 0, which takes every |c| past the last step)."""
        step = np.abs(np.arange(2 * self.top + 2) - self.top - 0.5).astype(np.int64)  # top .. 0, 0 .. top
        neg = np.arange(2 * self.top + 2) <= self.top
        high = np.minimum(self.lo + ((step + 1) << self.shift) - 1, 0x7F800000)  # a negative bucket's largest |c|
        low = np.where(step == 0, 0, self.lo + (step << self.shift))  # a positive one's least
        out = np.where(neg, -(high.astype(np.uint32).view(_F32)), low.astype(np.uint32).view(_F32))
        out[0] = -np.inf
        return out.astype(_F32)

    def count(self, v: np.ndarray, near: bool = False) -> np.ndarray:
        """What the kernel's log-bucket search gives for f32 values v (keys at or below v; a NaN v is
        the kernel's to map first). near: v within a rounding of [-1, 1], as the kernel's unclamped
        search (quantize_blockwise) takes it; its buckets stay below the clamped last ones."""
        if near:
            assert np.all(self._off(v)[1] >> self.shift < self.top)
        b, rank = self._parts(v)
        return (np.asarray(self.entries, np.int64)[b] + rank) >> self.shift


@dataclass(frozen=True)
class Search:
    """keys: sorted, 2^levels - 1 of them; strict: count keys below v ("<"), else at or below ("<=");
    order: the code of each sorted slot where the table is not sorted (FP4: +0 before -0, stable)."""

    keys: tuple[float, ...]
    strict: bool
    order: tuple[int, ...] | None
    pad: int  # the code of 0.0 (a padding slot of the last byte)
    buckets: Buckets | LogBuckets | None = None  # the bucket search, where the table allows one

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
    def order_bits(self) -> int:
        """order packed 4 bits an entry, entry 0 lowest (tables of up to 16 entries)."""
        assert self.order is not None and len(self.order) <= 16
        return sum(c << (4 * i) for i, c in enumerate(self.order))

    def count(self, v: np.ndarray) -> np.ndarray:
        """What the kernel's search gives for f32 values v (a test's oracle of the tree)."""
        v = np.asarray(v, _F32)
        n = np.searchsorted(np.asarray(self.keys, _F32), v, side="left" if self.strict else "right")
        return np.where(np.isnan(v), 0, n)  # every comparison with NaN is false: the search goes left


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
    found = Search(keys, not lookup, None if ident else tuple(int(o) for o in order), pad)
    return dataclasses.replace(found, buckets=_log_buckets(found) if lookup else _buckets(found))


def _buckets(s: Search) -> Buckets | None:
    """The first shape of BUCKET_SHAPES leaving at most R keys a bucket, with its tables; None where
    there is none or a key lies outside (-1, 1). Checked against the sorted keys' count at every key,
    the f32 on either side of it, -1, 0, 1 and the f32 just past -1 and 1."""
    keys = np.asarray(s.keys, _F32)
    if not (s.strict and np.all((keys > -1) & (keys < 1))):
        return None
    top = max(scale for scale, _, _ in BUCKET_SHAPES)
    assert int(np.float32(MAGIC).view(np.uint32)) & (1 << (2 * top + 1).bit_length()) - 1 == 0  # low bits: the bucket
    for scale, shift, per in BUCKET_SHAPES:
        probe = Buckets(scale, shift, per)
        of_key = probe.index(keys)
        if np.bincount(of_key).max() > per:
            continue
        base = np.searchsorted(of_key, np.arange(probe.mask + 1), side="left")  # keys in the buckets before b
        found = Buckets(scale, shift, per, tuple(int(b) for b in base), (*s.keys, *[PAD] * per))
        edges = [-1, 0, -0.0, 1, np.nextafter(_F32(1), _F32(2)), np.nextafter(_F32(-1), _F32(-2))]
        near = np.concatenate([keys, np.nextafter(keys, _F32(-2)), np.nextafter(keys, _F32(2)), edges]).astype(_F32)
        assert np.array_equal(found.count(near), s.count(near)), (scale, shift, per)
        return found
    return None


LOG_SHIFTS = (20, 19, 18, 17, 16)  # 8 .. 128 buckets a binade, the fewest first


def _log_buckets(s: Search) -> LogBuckets | None:
    """The lookup rule's log buckets (module docstring): the fewest leaving at most one key to compare
    in any, LO the power of two below the least nonzero |key| (its low bit set or not); None where the
    keys are not at-or-below keys within [-1, 1] or the counts outgrow a byte. Checked against the
    sorted keys' count at every key, every bucket's least c, the floats on either side of both, +-0,
    +-1, past them and +-inf."""
    keys = np.asarray(s.keys, _F32)
    if s.strict or len(keys) > 255 or not np.all(np.abs(keys) <= 1) or not np.any(keys != 0):
        return None
    least_mag = float(np.min(np.abs(keys[keys != 0])))
    lo0 = int(np.float32(2.0 ** (np.floor(np.log2(least_mag)) - 1)).view(np.uint32))
    one = int(np.float32(1).view(np.uint32))
    for shift in LOG_SHIFTS:
        for lo in (lo0, lo0 + 1):
            # steps 0 .. top - 1 reach past 1 (c within one rounding of [-1, 1]); step top: |c| beyond, inf
            probe = LogBuckets(lo, shift, ((one + 1 - lo) >> shift) + 1)
            least = probe.least()
            base = np.searchsorted(keys, least, side="right")  # keys at or below each bucket's least c
            ends = np.searchsorted(keys, np.append(least[1:], np.inf), side="left")  # keys below the next bucket
            if np.max(ends - base) > 1:
                continue
            # the last two buckets hold no key: every c there (an infinite one, from an absmax of 2^-128 or
            # less) counts as +-1 does
            assert least[-1] > keys.max() and -least[-1] < keys.min()
            t = np.full(base.size, 1 << shift)
            one_key = ends > base
            t[one_key] = probe.rank(keys[base[one_key]])
            entries = tuple(int(e) for e in (base << shift) + (1 << shift) - t)
            found = dataclasses.replace(probe, entries=entries)
            edges = np.asarray([-1, 0, -0.0, 1, 2.0**-30, -(2.0**-30), np.inf, -np.inf], _F32)
            near = np.concatenate([keys, least[1:]]).astype(_F32)
            near = np.concatenate([near, np.nextafter(near, _F32(-2)), np.nextafter(near, _F32(2)), edges,
                                   np.nextafter(_F32([1, -1]), _F32([2, -2]))])  # fmt: skip
            assert np.array_equal(found.count(near), s.count(near)), (lo, shift)
            return found
    return None
