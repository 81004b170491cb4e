"""tests/matrix.py: spread runs every case once and every group meets every value it can; one_per_group
keeps one case a group."""

from collections import defaultdict

from . import matrix


def test_spread_keeps_every_case_and_turns_through_the_values(monkeypatch):
    monkeypatch.setattr(matrix, "FULL", False)
    cases = [(f, d) for f in ("a", "b", "c") for d in ("f32", "f16", "bf16")]
    pairs = matrix.spread(cases, ["x", "y"], lambda c: c[0])
    assert [c for c, _ in pairs] == cases
    met = defaultdict(set)
    for (f, _), v in pairs:
        met[f].add(v)
    assert all(met[f] == {"x", "y"} for f in "abc")
    singles = matrix.spread(["a", "b", "c"], ["x", "y"], lambda c: c)  # groups of one still take turns
    assert {v for _, v in singles} == {"x", "y"}


def test_full_crosses_every_case_with_every_value(monkeypatch):
    monkeypatch.setattr(matrix, "FULL", True)
    assert matrix.spread(["a", "b"], [1, 2, 3], lambda c: c) == [(c, v) for c in "ab" for v in (1, 2, 3)]


def test_one_per_group_keeps_one_case_a_group_and_turns(monkeypatch):
    monkeypatch.setattr(matrix, "FULL", False)
    cases = [("a", 256), ("a", 512), ("b", 256), ("b", 512), ("c", 128)]
    kept = matrix.one_per_group(cases, lambda c: c[0])
    assert kept == [("a", 256), ("b", 512), ("c", 128)]  # in order, one each, the choice turning
    # groups of one between groups of two: the pairs still turn (counted by the groups' size)
    mixed = [("a", 256), ("a", 512), ("x", 512), ("b", 256), ("b", 512), ("y", 512)]
    assert matrix.one_per_group(mixed, lambda c: c[0]) == [("a", 256), ("x", 512), ("b", 512), ("y", 512)]
    monkeypatch.setattr(matrix, "FULL", True)
    assert matrix.one_per_group(cases, lambda c: c[0]) == cases


def test_but_groups_cases_equal_but_one_parameter():
    group = matrix.but("wg")
    assert group(("q4_0", 8, {"wg": 256, "rpw": 4})) == group(("q4_0", 8, {"wg": 512, "rpw": 4}))
    assert group(("q4_0", 8, {"wg": 256, "rpw": 4})) != group(("q4_0", 8, {"wg": 256, "rpw": 2}))
    assert group(("q4_0", 8, {"wg": 256})) != group(("q4_0", 1, {"wg": 256}))
