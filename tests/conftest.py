"""Shared fixtures: poisoned outputs for every kernel test, seeded generators."""

import zlib

import numpy as np
import pytest

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
