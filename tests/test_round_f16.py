"""round_to_f16 (f32 activations rounded to f16 pairs once, for the mma path) on every CPU device
here: numpy's f16 rounding of ties, subnormals, overflow and the infinities, NaN for NaN."""

import numpy as np
import pytest

from qkgen.backends import get
from qkgen.kernels.ops.round_f16 import round_reference
from qkgen.tools import check

opencl, sycl = get("opencl"), get("sycl")
TARGETS = [("opencl", d.name) for d in opencl.devices()] if opencl.is_available() else []
TARGETS += [("sycl", None)] if sycl.is_available() else []


def test_reference_words_put_the_even_value_low():
    words = round_reference(np.array([[1.0, -2.0, 65520.0, 2.0**-25 * 3]], np.float32))
    assert words.dtype == np.uint32 and words.tolist() == [0xC000_3C00, 0x0002_7C00]  # ties to even


@pytest.mark.skipif(not TARGETS, reason="no OpenCL or SYCL device")
@pytest.mark.parametrize("backend, device", TARGETS)
def test_device_rounding_matches_numpy(backend, device, rng, poisoned):
    ok, differing = check._check_round_to_f16({}, None, rng, backend, device)
    assert ok, f"{differing:.0f} words differ"
