"""Shared fixtures: poisoned outputs for every kernel test, seeded generators."""

import zlib

import numpy as np
import pytest

import qkgen.backends.base
import qkgen.runtime.plan


@pytest.fixture
def rng(request):
    # A fresh, reproducible generator per test: seeded by the test's name.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def poisoned():
    """Outputs are filled with NaN bytes before kernels run: an unwritten element cannot pass."""
    before, qkgen.runtime.plan.POISON_OUTPUTS = qkgen.runtime.plan.POISON_OUTPUTS, True
    yield
    qkgen.runtime.plan.POISON_OUTPUTS = before


@pytest.fixture(autouse=True, scope="module")
def _quick_builds(request):
    """Files marked quick_build (tests of kernel variants: a knob's kernels against the defaults'
    or the reference) build their OpenCL and SYCL kernels without the optimizer (qkgen.backends.base.QUICK_BUILDS):
    the same arithmetic, a fraction of the suite's time. The files of the default paths build as
    users do."""
    before = qkgen.backends.base.QUICK_BUILDS
    qkgen.backends.base.QUICK_BUILDS = request.node.get_closest_marker("quick_build") is not None
    yield
    qkgen.backends.base.QUICK_BUILDS = before


def _work_unit(item) -> str:
    return item.nodeid.rsplit("::", 1)[0]  # pytest-xdist's --dist loadscope: a file's functions, or a class


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: units are sized by the tests that run
def pytest_collection_modifyitems(config, items):
    """The order pytest-xdist hands out work units in make test (--no-loadscope-reorder keeps it):
    units holding an `early` test first, then the rest by number of tests, most first (xdist's own
    order, which alone would start a unit of one long test, such as an Intel AOT device share,
    last, with the other worker idle at the end). Early units go smallest first: a worker takes
    another unit whenever two tests or fewer are pending on it, so the one-test AOT shares are dealt
    to both workers before the long early files."""
    size: dict[str, int] = {}
    first: dict[str, int] = {}
    early: set[str] = set()
    for i, item in enumerate(items):
        unit = _work_unit(item)
        size[unit] = size.get(unit, 0) + 1
        first.setdefault(unit, i)
        if item.get_closest_marker("early"):
            early.add(unit)
    order = {u: (0, size[u], first[u]) if u in early else (1, -size[u], first[u]) for u in size}
    items[:] = sorted(items, key=lambda item: order[_work_unit(item)])  # stable within a unit
