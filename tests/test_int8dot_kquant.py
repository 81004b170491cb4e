"""The integer-dot GEMV path for the super-block rows (Q2_K .. Q6_K: 256-element super-blocks, sub-block
scales of 16 or 32 elements, mins, high-bit planes; MXFP4 and NVFP4: E2M1 table codes looked up as
signed bytes, float sub-block scales) on Intel's CPU OpenCL runtime and SYCL on it.

gemv_int8dot is checked against int8dot_terms (the path's own definition: the reference q8_1 of x,
integer sums per sub-block, the same formula in float64) within an f32 rounding bound, and by a
normalized squared error against the float64 product with the unquantized activations (below
test_int8dot's NMSE bound for the legacy rows); that definition is itself checked against the product of the dequantized weight and
the dequantized q8_1 activations. Crafted weights with one nonzero code per row show each weight
element meets its own activation; a target without sub-groups and dot4 (NVIDIA's OpenCL C 1.2
rendering) runs on the CPU device too. Outputs are poisoned before each launch.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np
import pytest

import qkgen
from qkgen import formats as F
from qkgen.backends import get, open_device
from qkgen.formats import reference
from qkgen.formats.subscales import encode
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.int8dot import int8dot_reference, int8dot_terms
from qkgen.kernels.render import render
from qkgen.kernels.target import BACKENDS as TARGET_BACKENDS
from qkgen.runtime.api import quantize_q8_1_device
from qkgen.runtime.plan import Plan

from .matrix import spread

KQUANTS = ["q2_k", "q3_k", "q4_k", "q5_k", "q6_k"]
ROWS = [*KQUANTS, "mxfp4", "nvfp4"]
REFUSED = ["q8_k"]
ACT = F.get("q8_1")
EPS = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8}  # half an ulp of the output, relative
TINY = {"f32": 1e-30, "f16": 2.0**-25, "bf16": 1e-30}  # and absolute (f16 subnormals)
NMSE_MAX = 1e-3  # test_int8dot's: x through 8-bit q8_1
K = 5 * 256
OPENCL_WHY = get("opencl").why_unavailable()
SYCL_WHY = get("sycl").why_unavailable()
BACKENDS = [pytest.param("opencl", marks=pytest.mark.skipif(OPENCL_WHY is not None, reason=f"OpenCL: {OPENCL_WHY}")),
            pytest.param("sycl", marks=pytest.mark.skipif(SYCL_WHY is not None, reason=f"SYCL: {SYCL_WHY}"))]  # fmt: skip


def host(x32: np.ndarray, dtype: str) -> np.ndarray:
    """x in dtype on the host (bf16: uint16 bits)."""
    return x32 if dtype == "f32" else x32.astype(np.float16) if dtype == "f16" else reference.round_to(x32, "bf16")


def f64(a, dtype: str) -> np.ndarray:
    return reference.host_f32(np.asarray(a), dtype).astype(np.float64)


@functools.cache
def weight(fmt: str, n: int, k: int = K, seed: int = 0) -> qkgen.QTensor:
    """Random non-zero weights (a few outliers) quantized by the reference codec."""
    rng = np.random.default_rng([seed, n, k, ROWS.index(fmt)])
    w = rng.standard_normal((n, k)).astype(np.float32)
    w.flat[rng.integers(0, w.size, 3)] *= 8.0
    return reference.quantize(w, fmt)


def within_f32_bound(y: np.ndarray, qt, x32: np.ndarray, dtype: str) -> tuple[bool, float]:
    """y against int8dot_terms: a few f32 roundings per term and the sum over terms, plus half an
    ulp of the output dtype."""
    terms = int8dot_terms(qt, x32)
    want = terms.sum(axis=-1)
    bound = (terms.shape[-1] + 8) * 2.0**-24 * np.abs(terms).sum(axis=-1) + EPS[dtype] * np.abs(want) + TINY[dtype]
    err = np.abs(y - want)
    return bool(np.all(err <= bound)), float(np.max(err / bound))


def nmse(y: np.ndarray, x: np.ndarray, w: np.ndarray) -> float:
    """Squared error of y against the float64 product x @ w.T, over the square that product has on
    average for independent x and w (sum_k x_k^2 w_k^2; robust where N * M is a few values)."""
    return float(((y - x @ w.T) ** 2).sum() / ((x**2) @ (w**2).T).sum())


def assert_kernel_within_bound(dev, ks, fmt: str, m: int, dtype: str, rng) -> None:
    """One launch of the rendered kernel ks on dev (37 rows of fmt, x [m, K] through the device's
    q8_1), its y within the f32 bound of int8dot_terms."""
    n = 37
    qt = weight(fmt, n)
    x = host(rng.standard_normal((m, K)).astype(np.float32), dtype)
    plan = Plan(dev, ks)
    sizes = dict(N=n, K=K, M=m)
    ((buf, arr, dt),) = plan.outputs(sizes).values()
    plan.launch({"data": qt.data, "xq": quantize_q8_1_device(x, backend="opencl"), "y": buf}, sizes)
    y = f64(dev.download(arr, dt, m * n).reshape(m, n), dtype)
    ok, worst = within_f32_bound(y, qt, reference.host_f32(x, dtype), dtype)
    assert ok, f"outside the f32 bound of int8dot_terms: worst {worst}x"


def test_the_op_takes_the_super_block_rows_and_refuses_the_rest():
    formats = set(get_op("gemv_int8dot").formats())
    assert set(ROWS) <= formats and not set(REFUSED) & formats
    for name in REFUSED:
        with pytest.raises(qkgen.QKGenValueError, match=f"format: gemv_int8dot does not take {name}; allowed: "):
            render("gemv_int8dot", name, "cuda")


# (M, N): M = 1 takes the M = 1 kernel, 3 and 8 the M-tiled one (3: a partial tile); N = 1 and 5 are
# fewer rows than a work-group's. Each format, dtype and backend gets one pair, the pairs taking turns
# within a format (tests/matrix.py): a kernel is built per case, its launch costs little.
MN = [(1, 67), (3, 5), (1, 1), (8, 67), (1, 5), (8, 1)]
INT8DOT_CASES = [pytest.param(fmt, dtype, m, n, b.values[0], marks=b.marks, id=f"{fmt}-{dtype}-m{m}-n{n}-{b.values[0]}")
                 for (fmt, dtype, b), (m, n) in spread([(f, d, b) for f in ROWS for d in ("f32", "f16", "bf16")
                                                        for b in BACKENDS], MN, lambda c: c[0])]  # fmt: skip


@pytest.mark.parametrize("fmt, dtype, m, n, backend", INT8DOT_CASES)
def test_gemv_int8dot(fmt, dtype, m, n, backend, rng, poisoned):
    qt = weight(fmt, n)
    x = host(rng.standard_normal((m, K)).astype(np.float32), dtype)
    x32 = reference.host_f32(x, dtype)
    y = qkgen.gemv(qt, x, path="int8dot", backend=backend)
    assert y.shape == (m, n) and y.dtype == x.dtype
    got = f64(y, dtype)
    ok, worst = within_f32_bound(got, qt, x32, dtype)
    assert ok, f"outside the f32 bound of int8dot_terms: worst {worst}x"
    assert nmse(got, x32.astype(np.float64), reference.dequantize(qt).astype(np.float64)) < NMSE_MAX


@pytest.mark.parametrize("fmt", ROWS)
def test_the_reference_is_the_product_of_the_dequantized_operands(fmt, rng):
    # int8dot_reference differs from dequantize(W) @ dequantize(q8_1 of x) only by f32 roundings
    # (dequantize's) and, for mins over whole q8_1 blocks, by s_x, the f16 of d_x * sum q_x.
    qt = weight(fmt, 9)
    x = rng.standard_normal((3, K)).astype(np.float32)
    xd = reference.dequantize(reference.quantize(x, "q8_1")).astype(np.float64).reshape(3, K)
    w = reference.dequantize(qt).astype(np.float64)
    terms = int8dot_terms(qt, x)
    mins = np.abs(terms[..., terms.shape[-1] // 2 :]).sum(-1) if F.get(fmt).has_min else 0.0
    bound = 2.0**-21 * (np.abs(xd) @ np.abs(w).T) + 2.0**-10 * mins
    assert np.all(np.abs(int8dot_reference(qt, x) - xd @ w.T) <= bound)


# the scale byte that stands for 1 in the float sub-block scales: 2^(128 - 128); UE4M3 2.0 (0x40), halved
UNIT_SCALE_BYTE = {"e8m0_half": 128, "ue4m3_half": 0x40}


def single_code_weight(fmt: F.Format, k: int) -> tuple[qkgen.QTensor, float]:
    """A [k, k] weight whose row r has one nonzero value, at element r (d = 1, every sub-block
    scale 1, dmin and every min 0; table rows: the table's largest value), and that value."""
    if fmt.code == "table":
        zero, top = fmt.table.index(0.0), int(np.argmax(fmt.table))
        value = fmt.table[top]
    else:
        zero, top = fmt.zero, (1 << fmt.bits) - 1
        value = float(top - fmt.zero)
    codes = np.full((k, k), zero, np.int64)
    codes[np.arange(k), np.arange(k)] = top
    nb = k * k // fmt.block
    data = reference.pack_codes(codes, fmt, k * k).reshape(nb, fmt.block_bytes)
    at = fmt.offsets[fmt.scales_field]
    if fmt.sub_scales in UNIT_SCALE_BYTE:
        data[:, at : at + fmt.sub_count] = UNIT_SCALE_BYTE[fmt.sub_scales]
    else:
        ones = np.ones((nb, fmt.sub_count), np.int32)
        scales = encode(fmt.sub_scales, ones, 0 * ones if fmt.has_min else None)
        data[:, at : at + fmt.member(fmt.scales_field).nbytes] = scales
        data[:, fmt.offsets["d"] : fmt.offsets["d"] + 2] = np.array([1.0], "<f2").view(np.uint8)  # dmin stays 0
    qt = qkgen.QTensor(format=fmt, shape=(k, k), data=data.reshape(-1), blocksize=fmt.block)
    return qt, value


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", ROWS)
def test_each_weight_element_meets_its_own_activation(fmt, backend, rng, poisoned):
    # Row r's only nonzero code is element r: y[m, r] must be value * (x[m, r] through q8_1), exactly
    # but for two f32 roundings (d_x * sumi, then the scale): every slot, unit, sub-block and plane.
    k = 2 * 256
    qt, value = single_code_weight(F.get(fmt), k)
    assert np.array_equal(reference.dequantize(qt), value * np.eye(k, dtype=np.float32))
    x = np.stack([rng.permutation(np.linspace(-2, 2, k)) for _ in range(2)]).astype(np.float32)  # spaced apart
    xd = reference.dequantize(reference.quantize(x, "q8_1")).astype(np.float64).reshape(2, k)
    y = np.asarray(qkgen.gemv(qt, x, path="int8dot", backend=backend)).astype(np.float64)
    assert np.all(np.abs(y - value * xd) <= 2.0**-23 * np.abs(value * xd)), np.max(np.abs(y - value * xd))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fmt", ["q3_k", "q4_k"])
def test_k_must_be_whole_super_blocks(fmt, backend, rng):
    qt = qkgen.quantize(rng.standard_normal((2, 384)).astype(np.float32), fmt)  # 3 super-blocks, 1.5 per row
    with pytest.raises(qkgen.QKGenValueError, match=re.escape(f"x.shape: K=384 must be a multiple of 256 for the "
                                                              f"int8dot path of {fmt}")):  # fmt: skip
        qkgen.gemv(qt, np.ones((1, 384), np.float32), path="int8dot", backend=backend)


@pytest.mark.skipif(OPENCL_WHY is not None, reason=f"OpenCL: {OPENCL_WHY}")
@pytest.mark.parametrize("mmax, dtype", [(1, "f32"), (8, "bf16"), (8, "f16")])
@pytest.mark.parametrize("fmt", ROWS)
def test_without_sub_groups_and_dot4(fmt, mmax, dtype, rng):
    """What NVIDIA's OpenCL C 1.2 gets (local-memory trees, the portable dot product, no fp16
    arithmetic), compiled for and run on the CPU device."""
    dev = open_device("opencl", None)
    t = dataclasses.replace(dev.target, subgroup_size=0, fp16=False, dot4=False)
    ks = render("gemv_int8dot", fmt, t, dtype=dtype, mmax=mmax)
    assert "scratch[lid]" in ks.source and "qk_dot4_i8(" in ks.source and "sub_group" not in ks.source
    assert_kernel_within_bound(dev, ks, fmt, mmax if mmax == 1 else 5, dtype, rng)


# ---------------------------------------------------------------------------------------------
# rendered sources (no device)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ROWS)
def test_dot_product_forms(fmt):
    assert "__dp4a(" in render("gemv_int8dot", fmt, "cuda", dtype="f16").source
    assert "dot_4x8packed_ss_int(" in render("gemv_int8dot", fmt, "opencl-intel-gpu").source
    for target in ("opencl-nvidia", "sycl"):
        src = render("gemv_int8dot", fmt, target).source
        assert "dot_4x8packed" not in src and "qk_dot4_i8(" in src and "(int)(char)" in src


@pytest.mark.parametrize("words", [False, True])
@pytest.mark.parametrize("backend", TARGET_BACKENDS)
@pytest.mark.parametrize("fmt", ROWS)
def test_loads_never_wider_than_the_code_runs_alignment(fmt, backend, words):
    """2-byte aligned rows (q3_k, q6_k): 16-bit pairs, or (word_loads, CUDA's default) words from the
    boundary at or 2 bytes below the run, shifted; 1-byte aligned ones (mxfp4): bytes, or words from
    the boundary at or below the run put together by funnel shifts; wider-aligned rows: wide loads."""
    row = F.get(fmt)
    body = render("gemv_int8dot", fmt, backend, word_loads=words).source.split("void gemv_int8dot_", 1)[1]
    # code words are read through cp / hp, pointers into the block (the words from a boundary below aside)
    below = re.findall(r"uint\*\)\((cp|hp) - (w|wh)_(sh / 8u|r)\)", body)
    wide = re.search(r"(uint|uint4|uint2|vec<uint, \d>)\*\)\(?(bp|cp|hp)\b", re.sub(r"uint\*\)\((cp|hp) - ", "", body))
    if row.block_align in (1, 2):
        assert not wide, (fmt, backend)
        assert bool(below) == words, (fmt, backend)
        assert ("ushort*)cp)" if row.block_align == 2 else "uchar*)cp)") in body, (fmt, backend)
    else:
        assert wide and not below, (fmt, backend)


@pytest.mark.skipif(OPENCL_WHY is not None, reason=f"OpenCL: {OPENCL_WHY}")
@pytest.mark.parametrize("fmt", ["q3_k", "q6_k", "mxfp4"])
def test_word_loads_of_unaligned_runs(fmt, rng, poisoned):
    """word_loads on the CPU device: the 2-byte aligned runs of q3_k and q6_k and the 1-byte
    aligned ones of mxfp4 (17-byte blocks: every start mod 4 in 37 rows of 40 blocks) as shifted
    4-byte words, against the f32 bound of int8dot_terms."""
    dev = open_device("opencl", None)
    ks = render("gemv_int8dot", fmt, dev.target, dtype="f16", mmax=8, word_loads=True)
    assert "word_loads=1" in ks.source
    assert_kernel_within_bound(dev, ks, fmt, 3, "f16", rng)


SIXTEENS = [f for f in ROWS if F.get(f).sub_block == 16]  # sub-blocks of half a q8_1 block


@pytest.mark.skipif(OPENCL_WHY is not None, reason=f"OpenCL: {OPENCL_WHY}")
@pytest.mark.parametrize("ept", [16, 32])
@pytest.mark.parametrize("mmax", [1, 8])
@pytest.mark.parametrize("fmt", SIXTEENS)
def test_chunks_of_a_sub_block_or_a_whole_q8_1_block(fmt, mmax, ept, rng, poisoned):
    """ept 32 (the default): a lane takes two 16-element sub-blocks (a whole q8_1 block) at once, a
    scale (and a min, an activation code sum) each; ept 16: one sub-block. Against the f32 bound of
    int8dot_terms."""
    dev = open_device("opencl", None)
    ks = render("gemv_int8dot", fmt, dev.target, dtype="f16", mmax=mmax, ept=ept)
    assert f"ept={ept}" in ks.source and ("sr[r][1] = s;" in ks.source) == (ept == 32)
    assert_kernel_within_bound(dev, ks, fmt, 1 if mmax == 1 else 6, "f16", rng)


def test_chunk_size_choices():
    assert "ept=32" in render("gemv_int8dot", "q6_k", "cuda").source
    with pytest.raises(qkgen.QKGenValueError, match=r"ept: 24; allowed: 16 \(a sub-block\) or 32 \(a q8_1 block\)"):
        render("gemv_int8dot", "q6_k", "cuda", ept=24)
    with pytest.raises(qkgen.QKGenValueError, match=r"ept: 16; allowed: an int in 32\.\.32"):
        render("gemv_int8dot", "q4_k", "cuda", ept=16)
