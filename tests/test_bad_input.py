"""Bad input gets a clear exception naming the argument and the allowed values."""

import re

import numpy as np
import pytest

import qkgen
from qkgen.formats import reference
from qkgen.backends import get, select

opencl = get("opencl")
needs_device = pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")


@pytest.fixture
def qt(rng):
    return reference.quantize(rng.standard_normal((4, 128)).astype(np.float32), "nf4")


def raises(match):
    return pytest.raises(ValueError, match=re.escape(match))


@needs_device
def test_wrong_dtype_of_packed_data(qt):
    with raises("data: dtype int8; allowed: uint8"):
        qkgen.dequantize(qt.with_arrays(data=qt.data.view(np.int8)), backend="opencl")


@needs_device
def test_wrong_dtype_of_absmax(qt):
    with raises("absmax: dtype float64; allowed: float32"):
        qkgen.dequantize(qt.with_arrays(absmax=qt.absmax.astype(np.float64)), backend="opencl")


@needs_device
def test_wrong_output_dtype(qt):
    with raises("dtype: 'int8' is not supported; allowed: f32, f16, bf16"):
        qkgen.dequantize(qt, "int8", backend="opencl")


@needs_device
def test_non_contiguous_array(qt):
    doubled = np.repeat(qt.data, 2)[::2]
    assert not doubled.flags.c_contiguous
    with raises("data: array is not contiguous; allowed: C-contiguous arrays"):
        qkgen.dequantize(qt.with_arrays(data=doubled), backend="opencl")


@needs_device
def test_wrong_number_of_bytes(qt):
    with raises("data: 255 bytes, but nf4[4x128] bs64 needs 256"):
        qkgen.dequantize(qt.with_arrays(data=qt.data[:-1]), backend="opencl")


def test_shape_the_format_cannot_divide(rng):
    with raises("x: 100 elements; q4_0 needs a multiple of 32"):
        reference.quantize(rng.standard_normal(100).astype(np.float32), "q4_0")


@pytest.mark.parametrize("bs, allowed", [(48, "allowed: 32, 64"), (8192, "allowed: 32, 64"), (True, "allowed")])
def test_bad_blocksize(rng, bs, allowed):
    with pytest.raises(ValueError, match=allowed):
        qkgen.quantize(rng.standard_normal(256).astype(np.float32), "nf4", blocksize=bs)


def test_unknown_format_and_backend(qt):
    with raises("format: unknown format 'nf3'"):
        qkgen.quantize(np.ones(64, np.float32), "nf3")
    with raises("backend: unknown backend 'vulkan'; allowed: cuda, sycl, opencl"):
        qkgen.dequantize(qt, backend="vulkan")


def test_unavailable_backend_says_why(monkeypatch):
    monkeypatch.setenv("QKGEN_BACKEND", "cuda")
    if get("cuda").is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(qkgen.BackendUnavailable, match="backend 'cuda' \\(from QKGEN_BACKEND\\) cannot be used: "):
        select()


@needs_device
def test_unknown_device(qt):
    with raises("device: 'no-such-gpu' not found on opencl; allowed: an index or a name substring of 0:"):
        qkgen.dequantize(qt, backend="opencl", device="no-such-gpu")


def test_not_a_qtensor():
    with raises("qtensor: expected a QTensor, got ndarray"):
        qkgen.dequantize(np.zeros(4, np.uint8), backend="opencl")
