"""The quantizer's table searches (kernels/ops/table_search.py), on the host: the breadth-first tree
walked as the kernels walk it counts what the sorted keys count, and bitsandbytes' 65536-step lookup
is the count of cuts at or below c, at every cut, the f32 on either side of it, and random c.
(Every f32 in [-1, 1] was compared once by hand: 2026-11-27, no mismatch; too slow for a test.)"""

from __future__ import annotations

import numpy as np
import pytest

from qkgen import formats as F
from qkgen.formats.bnb8 import lookup_codes
from qkgen.kernels.ops.table_search import NEVER, PAD, search

TABLES = {"nf4": (F.get("nf4").table, False), "fp4": (F.get("fp4").table, False),
          "blockwise8": (F.get("blockwise8").table, True), "nested": (F.get("nf4").nested_table, True)}  # fmt: skip


def walk(s, v: np.ndarray) -> np.ndarray:
    """The kernel's tree walk: right where the node's key is below (strict) or at or below v."""
    tree = np.asarray(s.tree, np.float32)
    node = np.zeros(v.shape, np.int64)
    for _ in range(s.levels):
        key = tree[node]
        right = key < v if s.strict else key <= v
        node = 2 * node + np.where(right, 2, 1)
    return node - tree.size


@pytest.mark.parametrize("name", TABLES)
def test_tree_walk_counts_the_sorted_keys(name, rng):
    table, lookup = TABLES[name]
    s = search(table, lookup)
    keys = np.asarray(s.keys, np.float32)
    assert keys.size == 2**s.levels - 1 == len(table) - 1 and np.all(np.diff(keys) >= 0)
    assert np.all((keys > -1) & ((keys <= 1) | (keys == NEVER)))  # why the kernels need no clamp
    near = np.concatenate([keys, np.nextafter(keys, np.float32(-3)), np.nextafter(keys, np.float32(3))])
    v = np.concatenate([near, rng.uniform(-1.5, 1.5, 20000).astype(np.float32), [np.nan, -1, 1, 0, -0.0]])
    v = v.astype(np.float32)
    assert np.array_equal(walk(s, v), s.count(v))
    assert s.count(np.float32([np.nan]))[0] == 0


@pytest.mark.parametrize("name", ["blockwise8", "nested"])
def test_lookup_is_the_count_of_cuts(name, rng):
    table, _ = TABLES[name]
    s = search(table, lookup=True)
    cuts = np.asarray(s.keys, np.float32)
    steps = np.arange(-64, 65)
    bits = cuts[cuts <= 1].view(np.int32)[:, None] + steps[None, :]  # 64 f32 either side of each cut
    near = bits.astype(np.int32).view(np.float32).reshape(-1)
    near = near[(near >= -1) & (near <= 1)]
    c = np.concatenate([near, rng.uniform(-1, 1, 200000).astype(np.float32), [-1, 1, 0, -0.0, np.nan]])
    c = c.astype(np.float32)
    assert np.array_equal(s.count(c), lookup_codes(c, table))
    # beyond [-1, 1] (c = v / absmax rounded), the count is that of -1 or 1: the kernels do not clamp
    assert np.array_equal(s.count(np.float32([-1.0000001, 1.0000001])), lookup_codes(np.float32([-1, 1]), table))


@pytest.mark.parametrize("name", ["nf4", "fp4"])
def test_buckets_count_the_sorted_keys(name, rng):
    """The bucket searches as the kernels compute them (nf4: 16 buckets a unit on centres, a key each;
    fp4: 256, a key each: its keys -1/384, 0 and 1/384 lie in three buckets), at every key, the f32
    on either side of it, random c, the ends of [-1, 1] and the f32 just past them. (Every f32 in [-1, 1] was compared once by hand: 2026-12-02,
    no mismatch; too slow for a test.) Any other c, the c of a non-finite x, still counts within
    0 .. 15 and reads within the tables."""
    s = search(F.get(name).table)
    b = s.buckets
    shape, mask = {"nf4": ((16, 0.0, 1), 63), "fp4": ((256, 0.0, 1), 1023)}[name]
    assert (b.scale, b.shift, b.per) == shape and (b.mask, len(b.base)) == (mask, mask + 1)
    assert len(b.keys) == 15 + b.per and b.keys[15:] == (PAD,) * b.per and max(b.base) + b.per <= len(b.keys)
    keys = np.asarray(s.keys, np.float32)
    near = np.concatenate([keys, np.nextafter(keys, np.float32(-3)), np.nextafter(keys, np.float32(3))])
    edges = [-1, 1, 0, -0.0, np.nextafter(np.float32(1), np.float32(2)), np.nextafter(np.float32(-1), np.float32(-2)),
             2.0**-149, -(2.0**-149), 1e-30, -1e-30]  # fmt: skip
    tiny = (rng.standard_normal(20000) * 1e-3).astype(np.float32)  # about fp4's three keys near 0
    v = np.concatenate([near, rng.uniform(-1, 1, 200000).astype(np.float32), tiny, edges]).astype(np.float32)
    assert np.array_equal(b.count(v), s.count(v))
    # far outside [-1, 1] (only from a non-finite x, refused by the host) the count stays a code
    wild = np.concatenate([np.float32([np.inf, -np.inf, 3e38, -3e38, 2.0, 2.5, 3.0, -1.5, -7.0, 1e6]),
                           rng.uniform(-1e3, 1e3, 10000).astype(np.float32)])
    nan_bits = np.uint32([0x7FC00000, 0x7FFFFFFF, 0xFFC00000, 0x7F800001]).view(np.float32)  # numpy's, CUDA's, others
    got = b.count(np.concatenate([wild, nan_bits]))
    assert np.all((got >= 0) & (got <= 15))


@pytest.mark.parametrize("name", ["blockwise8", "nested"])
def test_log_buckets_count_the_cuts(name, rng):
    """The lookup rule's log buckets as the kernels compute them (64 buckets a binade from 2^-26, one
    key left to compare in each, by the rank's carry into the entry's count; the eight equal cuts at
    -2^-25 counted by the entry's base): the count of cuts at or below c at 64 f32 either side of every
    cut and of every bucket's least c, uniform and log-uniform random c of both signs, +-0, +-1 and
    the f32 past them, +-inf (a value over an absmax below 2^-128 counts as +-1). Any other c (a
    non-finite x's, refused by the host) still reads within the table."""
    s = search(TABLES[name][0], lookup=True)
    b = s.buckets
    assert b.kind == "log" and (b.lo, b.shift, len(b.entries)) == (0x32800001, 17, 3332)
    assert len(b.entries) == 2 * b.top + 2 and max(b.entries) < 256 << b.shift  # the counts fit a byte's codes
    keys = np.asarray(s.keys, np.float32)
    assert np.count_nonzero(keys == np.float32(-(2.0**-25))) == 8  # why the base counts keys at a bucket's least c
    steps = np.arange(-64, 65)
    marks = np.concatenate([keys, b.least()[1:]]).astype(np.float32)
    bits = marks.view(np.int32)[:, None] + np.where(marks < 0, -1, 1)[:, None] * steps[None, :]
    near = bits.astype(np.int32).view(np.float32).reshape(-1)
    mags = np.float32(2.0) ** rng.uniform(-40, 0, 200000).astype(np.float32)
    edges = np.float32([-1, 1, 0, -0.0, np.nextafter(np.float32(1), np.float32(2)), np.nextafter(np.float32(-1), np.float32(-2)),
                        np.inf, -np.inf])  # fmt: skip
    v = np.concatenate([near[np.abs(near) <= 2], rng.uniform(-1, 1, 200000).astype(np.float32),
                        mags * rng.choice(np.float32([-1, 1]), mags.size), edges]).astype(np.float32)  # fmt: skip
    assert np.array_equal(b.count(v), s.count(v))
    # quantize_blockwise's search without the clamp: every c within a rounding of [-1, 1] (the largest
    # c of a finite x over its absmax) stays below the clamped buckets
    one_ish = np.nextafter(np.float32([1, -1]), np.float32([2, -2]))
    ok = v[np.abs(v) <= 1]
    assert np.array_equal(b.count(np.concatenate([ok, one_ish]), near=True), s.count(np.concatenate([ok, one_ish])))
    wild = np.concatenate([np.float32([np.inf, -np.inf, 3e38, -3e38, 2.0, -7.0]), rng.uniform(-1e3, 1e3, 10000).astype(np.float32),
                           np.uint32([0x7FC00000, 0x7FFFFFFF, 0xFFC00000, 0x7F800001]).view(np.float32)])  # fmt: skip
    assert np.all((b.index(wild) >= 0) & (b.index(wild) < len(b.entries)))  # within the table
    assert np.all((b.count(wild) >= 0) & (b.count(wild) <= len(keys)))
