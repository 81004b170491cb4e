"""Spreading a test matrix's costly dimension instead of crossing it.

A kernel test costs its build (a second or more on the CPU devices) far more than its launch, so a
dimension that picks a different kernel (the device, M's register tile) multiplies the suite's time.
spread() gives each case one value of such a dimension, turning through the values within each group
of cases (say one format and dtype), so every group still meets every value and every case still
runs, once. one_per_group() keeps one of cases that differ only in such a constant. QKGEN_FULL_MATRIX=1
(make test-full) crosses every case with every value, and keeps every case, instead.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

FULL = os.environ.get("QKGEN_FULL_MATRIX", "") not in ("", "0")


def spread(cases: Iterable[Any], values: Sequence[Any], group: Callable[[Any], Hashable]) -> list[tuple[Any, Any]]:
    """(case, value) pairs: the i-th case of a group gets values[(i + g) % len(values)], g counting the
    groups, so groups of one case still turn through the values. Every pair where FULL is set."""
    cases = list(cases)
    if FULL or len(values) < 2:
        return [(c, v) for c in cases for v in values]
    seen: Counter = Counter()
    start: dict[Hashable, int] = {}
    out = []
    for c in cases:
        key = group(c)
        start.setdefault(key, len(start))
        out.append((c, values[(seen[key] + start[key]) % len(values)]))
        seen[key] += 1
    return out


def one_per_group(cases: Iterable[Any], group: Callable[[Any], Hashable]) -> list[Any]:
    """For cases that differ only in a value the rest of the suite covers (a timed shape's work-group
    size): one case of each group, the kept member turning through the groups of the same size, so
    every value is kept somewhere. Cases keep their order; every case where FULL is set."""
    cases = list(cases)
    if FULL:
        return cases
    members: dict[Hashable, list[int]] = {}
    for i, c in enumerate(cases):
        members.setdefault(group(c), []).append(i)
    turn: Counter = Counter()  # groups seen so far, by size
    keep = set()
    for ids in members.values():
        keep.add(ids[turn[len(ids)] % len(ids)])
        turn[len(ids)] += 1
    return [c for i, c in enumerate(cases) if i in keep]


def but(key: str) -> Callable[[tuple], str]:
    """one_per_group's group for cases that end in a dict of render parameters: equal but for `key`."""
    return lambda c: json.dumps([*c[:-1], {k: v for k, v in c[-1].items() if k != key}])
