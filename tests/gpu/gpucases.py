"""What the GPU suite runs and how it judges: every dequantize kernel of the catalog on shapes with
odd sizes and partial blocks, random inputs, and bit-exact comparison with the reference codec
(f32 exactly; f16/bf16 equal to the correctly rounded reference)."""

from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest
from qkgen.formats import reference
from qkgen.tools import catalog
from qkgen import formats as F
from qkgen.formats import QTensor

# Per family: a single chunk or less (the tail path only), odd sizes with partial blocks / groups
# and a partial last chunk, and enough work for many blocks of threads. GGUF needs whole blocks.
SHAPES = {
    "bnb4": [(3,), (7, 333), (129, 1031)],
    "bnb8": [(5,), (5, 333), (129, 1031)],
    "gguf": [(32,), (7, 160), (65, 1056)],
    "int": [(1, 5), (7, 333), (129, 1031)],
    "kquant": [(256,), (3, 512), (65, 1024)],
    "mxfp4": [(64,), (7, 192), (65, 1024)],
}


def variant_id(v: dict) -> str:
    parts = [v["format"]]
    if v.get("nested"):
        parts.append("nested")
    if v.get("scale_mode"):
        parts.append(v["scale_mode"])
    if v.get("blocksize"):
        parts.append(f"bs{v['blocksize']}")
    parts.append(v["dtype"])
    return "-".join(parts)


def dequantize_cases(shapes: dict = SHAPES) -> list:
    """pytest params (variant, shape): every dequantize kernel on every shape of its family."""
    cases = []
    for v in catalog.variants("dequantize"):
        for shape in shapes[F.get(v["format"]).family]:
            cases.append(pytest.param(v, shape, id=f"{variant_id(v)}-{'x'.join(map(str, shape))}"))
    return cases


@functools.cache
def sample(fmt: str, shape: tuple, nested: bool = False, scale_mode: str | None = None,
           blocksize: int | None = None) -> QTensor:  # fmt: skip
    """A QTensor (numpy arrays) of reproducible random data: normal values, a few outliers, and a
    run of zeros (an all-zero block where the tensor is large enough)."""
    rng = np.random.default_rng(zlib.crc32(repr((fmt, shape, nested, scale_mode, blocksize)).encode()))
    x = (rng.standard_normal(shape) * 2).astype(np.float32)
    flat = x.reshape(-1)
    flat[: min(64, flat.size // 4)] = 0.0
    flat[rng.integers(0, flat.size, 3)] *= 8.0
    if F.get(fmt).family == "int":
        return reference.quantize(x, fmt, scale_mode=scale_mode, blocksize=blocksize)
    return reference.quantize(x, fmt, blocksize=blocksize, nested=nested)


def sample_for(v: dict, shape: tuple) -> QTensor:
    return sample(v["format"], tuple(shape), bool(v.get("nested")), v.get("scale_mode"), v.get("blocksize"))


def expected(qt: QTensor, dtype: str) -> np.ndarray:
    """The kernel's output on the host: f32 values, f16 values or bf16 bit patterns (uint16)."""
    ref = reference.dequantize(qt).reshape(qt.shape)
    return ref if dtype == "f32" else reference.round_to(ref, dtype)


def torch_host(t, dtype: str) -> np.ndarray:
    """A torch output as the host form expected() uses (bf16 as uint16 bit patterns)."""
    import torch

    t = t.detach().cpu()
    return t.view(torch.int16).numpy().view(np.uint16) if dtype == "bf16" else t.numpy()


def assert_same(out: np.ndarray, qt: QTensor, dtype: str) -> None:
    """Bit-identical to the reference (an unwritten, poisoned element is NaN bits: never equal)."""
    want = expected(qt, dtype)
    out = np.asarray(out)
    assert out.shape == want.shape, (out.shape, want.shape)
    assert out.dtype == want.dtype, (out.dtype, want.dtype)
    bits = np.uint32 if want.itemsize == 4 else np.uint16
    got_b, want_b = (
        np.ascontiguousarray(out).view(bits).reshape(-1),
        np.ascontiguousarray(want).view(bits).reshape(-1),
    )
    bad = np.flatnonzero(got_b != want_b)
    if bad.size:
        show = ", ".join(f"[{i}] got 0x{int(got_b[i]):x} want 0x{int(want_b[i]):x}" for i in bad[:8])
        pytest.fail(f"{qt.describe()} {dtype}: {bad.size} of {want_b.size} elements differ: {show}")


def to_device(qt: QTensor, convert) -> QTensor:
    """qt with every array replaced by convert(numpy array)."""
    return qt.with_arrays(**{k: convert(np.ascontiguousarray(v)) for k, v in qt.arrays().items()})


def int8dot_k(fmt: str) -> int:
    """K of the int8dot GEMV cases: 37 blocks of 32 (a multiple of no lane count) for the rows of
    one scale per q8_1 block, 5 super-blocks (80 sub-blocks of 16, 40 q8_1 blocks) for the K-quants."""
    block = F.get(fmt).block
    return 37 * 32 if block == 32 else 5 * block


def int8dot_within_bound(y64: np.ndarray, qt: QTensor, x32: np.ndarray, eps: float) -> tuple[bool, float]:
    """y (float64 of the output) against the int8dot path's own definition (int8dot_terms: the
    reference q8_1 of x, integer sums, the same formula in float64) within a few f32 roundings per
    term and the sum over terms, plus `eps` (half an ulp of the output dtype) relative."""
    from qkgen.kernels.ops.int8dot import int8dot_terms

    terms = int8dot_terms(qt, x32)
    want = terms.sum(axis=-1)
    bound = (terms.shape[-1] + 8) * 2.0**-24 * np.abs(terms).sum(axis=-1) + eps * np.abs(want) + 1e-30
    err = np.abs(y64 - want)
    return bool(np.all(err <= bound)), float(np.max(err / bound))
