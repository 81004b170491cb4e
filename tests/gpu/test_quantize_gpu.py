"""qkgen.quantize on CUDA tensors: the generated quantize kernels give the reference codec's bytes,
array by array, and the result stays on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

import qkgen

pytestmark = pytest.mark.gpu

CASES = [("nf4", {"blocksize": 64, "nested": True}), ("fp4", {"blocksize": 128}), ("blockwise8", {}),
         ("q4_0", {}), ("q4_1", {}), ("q5_0", {}), ("q5_1", {}), ("q8_0", {}),
         ("int4", {"scale_mode": "row"}), ("int8", {"scale_mode": "group"}),
         ("mxfp4", {}), ("nvfp4", {}), ("q8_k", {}), ("q2_k", {}), ("q3_k", {}), ("q4_k", {}), ("q5_k", {}),
         ("q6_k", {})]  # fmt: skip


@pytest.mark.parametrize("fmt, opts", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_quantize_cuda_tensor_equals_the_reference(fmt, opts, dtype, torch_cuda):
    torch = torch_cuda
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(67, 1024, generator=g) * 3).to(getattr(torch, dtype))
    got = qkgen.quantize(x.cuda(), fmt, **opts)
    want = qkgen.quantize(x.float().numpy(), fmt, **opts)
    for name, arr in want.arrays().items():
        dev = got.arrays()[name]
        assert dev.is_cuda, name
        np.testing.assert_array_equal(dev.cpu().numpy(), np.asarray(arr), err_msg=name)
