"""qkgen's CUDA dequantize is bit-identical to bitsandbytes' CUDA dequantize_4bit (nf4, fp4, nested
or not) and dequantize_blockwise (8-bit), on the same packed data, for f32, f16 and bf16 outputs.

The packed data comes either from qkgen's reference quantizer (handed to bnb with to_bnb) or from
bnb's own CUDA quantizer (wrapped with from_bnb, zero-copy)."""

from __future__ import annotations

import numpy as np
import pytest
import qkgen
from gpucases import sample
from qkgen.formats import QTensor

pytestmark = pytest.mark.gpu

CASES = [("nf4", 64, False), ("nf4", 64, True), ("nf4", 4096, True), ("fp4", 64, False), ("fp4", 128, True),
         ("fp4", 4096, False), ("nf4", 32, True), ("blockwise8", 256, False), ("blockwise8", 4096, False),
         ("blockwise8", 64, False)]  # fmt: skip
SHAPES = [(24, 40), (129, 1031), (7, 33)]  # (7, 33): an odd element count, a partial last block
DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def case_id(c):
    return f"{c[0]}-bs{c[1]}" + ("-nested" if c[2] else "")


def bnb_dequantize(bnb, torch, packed, state, dtype: str):
    state.dtype = getattr(torch, DTYPES[dtype])
    if state.quant_type in ("nf4", "fp4"):
        return bnb.dequantize_4bit(packed, state)
    return bnb.dequantize_blockwise(packed, state)


def assert_bit_identical(torch, ours, theirs, what: str):
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    ints = torch.int32 if ours.element_size() == 4 else torch.int16
    a, b = ours.reshape(-1).view(ints), theirs.reshape(-1).view(ints)
    bad = (a != b).nonzero().reshape(-1)
    if bad.numel():
        i = bad[:8].tolist()
        ours_v, theirs_v = ours.reshape(-1)[i].tolist(), theirs.reshape(-1)[i].tolist()
        pytest.fail(f"{what}: {bad.numel()} of {a.numel()} differ from bitsandbytes; at {i}: ours {ours_v} "
                    f"theirs {theirs_v}")  # fmt: skip


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_same_as_bnb_on_reference_packed_data(case, shape, dtype, bnb, torch_cuda):
    torch = torch_cuda
    name, bs, nested = case
    packed, state = sample(name, shape, nested, None, bs).to_bnb()
    packed = packed.cuda(0)
    state.to("cuda:0")
    theirs = bnb_dequantize(bnb, torch, packed, state, dtype)
    ours = qkgen.dequantize(QTensor.from_bnb(packed, state), dtype, backend="cuda", device=0)
    assert ours.device == packed.device
    assert_bit_identical(torch, ours, theirs, f"{case_id(case)} {shape} {dtype}")


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_same_as_bnb_on_bnb_packed_data(case, dtype, bnb, torch_cuda):
    torch = torch_cuda
    name, bs, nested = case
    x = torch.from_numpy(np.random.default_rng(bs).standard_normal((129, 1031)).astype(np.float32)).cuda(0)
    if name == "blockwise8":
        packed, state = bnb.quantize_blockwise(x, blocksize=bs)
    else:
        packed, state = bnb.quantize_4bit(x, blocksize=bs, compress_statistics=nested, quant_type=name)
    qt = QTensor.from_bnb(packed, state)
    assert qt.data.data_ptr() == packed.data_ptr()  # zero-copy
    theirs = bnb_dequantize(bnb, torch, packed, state, dtype)
    ours = qkgen.dequantize(qt, dtype, backend="cuda", device=0)
    assert_bit_identical(torch, ours, theirs, f"{case_id(case)} bnb-packed {dtype}")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name,nested", [("nf4", False), ("nf4", True), ("fp4", False), ("fp4", True)])
def test_gemv_close_to_bnb_matmul_4bit(name, nested, dtype, bnb, torch_cuda):
    """qkgen.gemv and bitsandbytes.matmul_4bit (batch 1) on the same packed weight agree: both
    accumulate differently, so they are compared against each other and the float64 product."""
    import bitsandbytes

    torch = torch_cuda
    rng = np.random.default_rng(7)
    n, k = 1031, 4096
    w = torch.from_numpy(rng.standard_normal((n, k)).astype(np.float32)).cuda()
    packed, state = bnb.quantize_4bit(w, blocksize=64, compress_statistics=nested, quant_type=name)
    tdt = getattr(torch, DTYPES[dtype])
    x = torch.from_numpy(rng.standard_normal((1, k)).astype(np.float32)).cuda().to(tdt)
    theirs = bitsandbytes.matmul_4bit(x, packed.t(), quant_state=state).float()
    ours = qkgen.gemv(QTensor.from_bnb(packed, state), x, backend="cuda")
    assert ours.dtype == tdt and tuple(ours.shape) == (1, n)
    state.dtype = torch.float32
    ref = x.double() @ bnb.dequantize_4bit(packed, state).double().t()
    scale = ref.norm()
    assert float((ours.double() - ref).norm() / scale) < 4e-3
    assert float((ours.double() - theirs.double()).norm() / scale) < 8e-3
