"""2^32 elements and more on the GPU: dequantize (an output of 2^32 + 2^20 f16 values, 8 GiB), gemv
and embedding past 2^32, on CUDA (torch tensors) and NVIDIA OpenCL. The weight is int1
[2^20 + 256, 4096], row scales 1, codes -1 below row 2^20 and +1 from it on: a 32-bit offset
wraps at row 2^20 and reads -1 there."""

from __future__ import annotations

import numpy as np
import pytest

import qkgen

pytestmark = pytest.mark.gpu

ROWS, K = 2**20 + 256, 4096
WRAP = 2**32 // K


def _weight(torch):
    codes = torch.zeros(ROWS * K // 8, dtype=torch.uint8, device="cuda")
    codes[WRAP * K // 8 :] = 0xFF
    codes[(WRAP + 7) * K // 8 : (WRAP + 8) * K // 8] = 0x55  # alternating: the row sums to 0
    return qkgen.QTensor(format=qkgen.formats.get("int1"), shape=(ROWS, K), data=codes, blocksize=128,
                         scale=torch.ones(ROWS, dtype=torch.float32, device="cuda"), scale_mode="row")  # fmt: skip


def _expected(rows: np.ndarray) -> np.ndarray:
    out = np.where(rows >= WRAP, float(K), -float(K))
    out[rows == WRAP + 7] = 0.0
    return out


def test_dequantize_gemv_embedding_past_2_32_on_cuda(torch_cuda):
    torch = torch_cuda
    qt = _weight(torch)
    out = qkgen.dequantize(qt, "f16")  # 8 GiB
    tail = out[WRAP - 2 :].float()
    assert torch.all(tail[:2] == -1) and torch.all(tail[2] == 1) and torch.all(tail[-1] == 1)
    assert torch.all(tail[9, 0::2] == 1) and torch.all(tail[9, 1::2] == -1)
    assert bool(torch.all(out[:WRAP] == -1)), "rows below 2^20 changed"
    del out, tail
    y = qkgen.gemv(qt, torch.ones((2, K), dtype=torch.float16, device="cuda"))
    np.testing.assert_array_equal(y.float().cpu().numpy()[1], _expected(np.arange(ROWS)))
    from qkgen.interop.lookup import embedding

    ids = torch.tensor([0, WRAP - 1, WRAP, WRAP + 7, ROWS - 1], dtype=torch.int32, device="cuda").view(torch.uint32)
    rows = embedding(qt, ids).float().sum(dim=1).cpu().numpy()
    np.testing.assert_array_equal(rows, _expected(np.array([0, WRAP - 1, WRAP, WRAP + 7, ROWS - 1])))


def test_gemv_past_2_32_on_nvidia_opencl(opencl_nvidia):
    codes = np.zeros(ROWS * K // 8, np.uint8)
    codes[WRAP * K // 8 :] = 0xFF
    codes[(WRAP + 7) * K // 8 : (WRAP + 8) * K // 8] = 0x55
    qt = qkgen.QTensor(format=qkgen.formats.get("int1"), shape=(ROWS, K), data=codes, blocksize=128,
                       scale=np.ones(ROWS, np.float32), scale_mode="row")  # fmt: skip
    y = qkgen.gemv(qt, np.ones((1, K), np.float32), backend="opencl", device="NVIDIA")
    np.testing.assert_array_equal(y[0], _expected(np.arange(ROWS)))
