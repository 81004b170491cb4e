"""Shared fixtures: poisoned outputs for every kernel test, seeded generators."""

import zlib

import numpy as np
import pytest

import qkgen.api


@pytest.fixture
def rng(request):
    # A fresh, reproducible generator per test: seeded by the test's name.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def poisoned():
    """Outputs are filled with NaN bytes before kernels run: an unwritten element cannot pass."""
    before, qkgen.api.POISON_OUTPUTS = qkgen.api.POISON_OUTPUTS, True
    yield
    qkgen.api.POISON_OUTPUTS = before
