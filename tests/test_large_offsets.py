"""Tensors of 2^32 elements or more: element offsets are 64-bit in every kernel.

The weight is int1 [2^20 + 256, 4096] with row scales 1: 2^32 + 2^20 elements, whose codes
(512 MiB) say -1 below row 2^20 and +1 from it on. A 32-bit offset wraps at 2^32, i.e. at row
2^20, and reads rows 0..255 (all -1) instead. The planted rows differ so a wrap to any row shows.
"""

from __future__ import annotations

import numpy as np
import pytest

import qkgen
from qkgen.errors import QKGenValueError

from qkgen import backends


def backend_params(names):
    """The backends among `names` this machine has, each a pytest param (skipped where missing)."""
    return [pytest.param(b, marks=pytest.mark.skipif(not backends.get(b).is_available(), reason=f"no {b}"))
            for b in names]  # fmt: skip

ROWS, K = 2**20 + 256, 4096
WRAP = 2**32 // K  # the first row whose elements sit at or past 2^32


@pytest.fixture(scope="module")
def big_int1():
    codes = np.zeros(ROWS * K // 8, np.uint8)  # bit 0: -1
    codes[WRAP * K // 8 :] = 0xFF  # bit 1: +1 from row 2^20 on
    # a few rows that are not all one sign: row WRAP + 7 alternates, so it sums to 0
    codes[(WRAP + 7) * K // 8 : (WRAP + 8) * K // 8] = 0x55
    return qkgen.QTensor(format=qkgen.formats.get("int1"), shape=(ROWS, K), data=codes, blocksize=128,
                         scale=np.ones(ROWS, np.float32), scale_mode="row")  # fmt: skip


def _expected_rows(rows: np.ndarray) -> np.ndarray:
    """Row sums of the planted weight with x = 1: -K below WRAP, +K from it on, 0 at WRAP + 7."""
    out = np.where(rows >= WRAP, float(K), -float(K))
    out[rows == WRAP + 7] = 0.0
    return out


@pytest.mark.parametrize("backend", backend_params(("opencl", "sycl")))
def test_gemv_past_2_32_elements(backend, big_int1):
    y = qkgen.gemv(big_int1, np.ones((1, K), np.float32), backend=backend)
    rows = np.arange(ROWS)
    np.testing.assert_array_equal(y[0], _expected_rows(rows))


@pytest.mark.parametrize("backend", backend_params(("opencl", "sycl")))
def test_embedding_rows_past_2_32_elements(backend, big_int1):
    from qkgen.interop.lookup import embedding

    ids = np.array([0, WRAP - 1, WRAP, WRAP + 7, ROWS - 1, 5], np.uint32)
    out = embedding(big_int1, ids, backend=backend)
    np.testing.assert_array_equal(out.sum(axis=1), _expected_rows(ids.astype(np.int64)))
    np.testing.assert_array_equal(out[3, :4], [1.0, -1.0, 1.0, -1.0])  # 0x55: LSB first


@pytest.mark.parametrize("backend", backend_params(("opencl", "sycl")))
def test_output_past_the_allocation_limit_is_a_clear_error(backend, big_int1):
    # f32 output of 2^32 + 2^20 elements is 16 GiB: over the CPU devices' largest allocation
    # (about 12 GiB on the CI-like host). The check runs before any buffer is made.
    from qkgen.backends import open_device

    dev = open_device(backend, None)
    limit = int(dev.dev.max_mem_alloc_size if backend == "opencl" else dev.sdev.max_mem_alloc_size)
    if big_int1.n * 4 <= limit:
        pytest.skip(f"{dev.info.name} allocates {limit} bytes at once")
    with pytest.raises(QKGenValueError, match=r"output: \d+ bytes; allowed: at most \d+ bytes, the largest single "):
        qkgen.dequantize(big_int1, backend=backend)


def test_a_dimension_past_32_bits_is_refused_before_any_launch():
    qt = qkgen.QTensor(format=qkgen.formats.get("int8"), shape=(2**32, 1), data=np.zeros(2**32, np.uint8),
                       blocksize=128, scale=np.ones(1, np.float32), scale_mode="tensor")  # fmt: skip
    with pytest.raises(QKGenValueError, match=r"qtensor.shape: .*dimensions of at most 4294967295"):
        qkgen.dequantize(qt)
