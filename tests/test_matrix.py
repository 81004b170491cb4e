"""tests/matrix.py's spread: every case runs once, and every group meets every value it can."""

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
