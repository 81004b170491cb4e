"""gemv's default path: the one measured faster for the format, M and kind of device (runtime.paths)."""

from __future__ import annotations

import numpy as np
import pytest

import qkgen
from qkgen.kernels.target import get_target
from qkgen.runtime.paths import FASTER_INT8DOT, FASTER_INT8MMA, FASTER_MMA, FASTER_MMA_F32, default_path, pairs_knobs


def test_the_table_names_int8dot_formats_only():
    int8dot = set(qkgen.kernels.ops.get_op("gemv_int8dot").formats())
    for key, fmts in FASTER_INT8DOT.items():
        assert fmts <= int8dot, key


@pytest.mark.parametrize("fmt", ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "nf4", "int4", "q4_k", "q6_k", "nvfp4"])
@pytest.mark.parametrize("m", [1, 2, 4, 5, 6, 8])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_default_path_follows_the_table(fmt, m, dtype):
    row = qkgen.formats.get(fmt)
    measured = FASTER_INT8DOT[("cuda", m > 1, dtype == "f32")]
    mma = m >= (FASTER_MMA_F32 if dtype == "f32" else FASTER_MMA)["cuda"].get(fmt, 9)
    int8mma = m >= FASTER_INT8MMA[("cuda", dtype == "f32")].get(fmt, 9)
    want = "mma" if mma else "int8mma" if int8mma else "int8dot" if fmt in measured else "float"
    assert default_path(get_target("cuda-sm90"), row, m, dtype) == want
    # nothing was measured for OpenCL and SYCL: the float path, whose accuracy is the f32 bound
    assert default_path(get_target("opencl-intel-gpu"), row, m, dtype) == "float"
    assert default_path(get_target("sycl-intel-gpu"), row, m, dtype) == "float"


def test_the_int8mma_table_names_its_formats_only_and_needs_the_instruction():
    taken = {f for op in ("gemv_int8mma", "gemv_int8mma_sub") for f in qkgen.kernels.ops.get_op(op).formats()}
    for key, fmts in FASTER_INT8MMA.items():
        assert set(fmts) <= taken and all(1 <= m <= 8 for m in fmts.values()), key
    q5_1 = qkgen.formats.get("q5_1")
    assert default_path(get_target("cuda-sm90"), q5_1, 8, "f32") == "int8mma"
    assert default_path(get_target("cuda-sm90"), q5_1, 1, "f32") == "int8dot"
    no_mma = get_target("cuda-sm90").__class__(**{**get_target("cuda-sm90").__dict__, "mma": False})
    assert default_path(no_mma, q5_1, 8, "f32") == "int8dot"  # sm_61..sm_75: dp4a, no int8 mma
    q4_k = qkgen.formats.get("q4_k")  # super-block rows: int8mma from the M measured, W in fragments
    assert [default_path(get_target("cuda-sm90"), q4_k, m, "f16") for m in (2, 3)] == ["int8dot", "int8mma"]
    assert default_path(no_mma, q4_k, 8, "f16") == "int8dot"


def test_the_mma_table_names_mma_formats_only_and_needs_the_instruction():
    mma = set(qkgen.kernels.ops.get_op("gemv_mma").formats())
    for backend, fmts in [*FASTER_MMA.items(), *FASTER_MMA_F32.items()]:
        assert set(fmts) <= mma and all(1 <= m <= 8 for m in fmts.values()), backend
    nf4 = qkgen.formats.get("nf4")
    assert default_path(get_target("cuda-sm90"), nf4, 8, "f16") == "mma"
    assert default_path(get_target("cuda-sm90"), nf4, 8, "bf16") == "mma"
    assert default_path(get_target("cuda-sm90"), nf4, 1, "f32") == "mma"  # x rounded to f16 as it loads
    assert default_path(get_target("cuda-sm90"), qkgen.formats.get("fp4"), 1, "f32") == "mma"  # run 81
    assert default_path(get_target("cuda-sm90"), qkgen.formats.get("blockwise8"), 1, "f32") == "mma"  # run 124
    for dtype in ("f16", "bf16"):  # runs 142 and 144
        assert default_path(get_target("cuda-sm90"), qkgen.formats.get("blockwise8"), 1, dtype) == "mma"
    int8 = qkgen.formats.get("int8")
    assert [default_path(get_target("cuda-sm90"), int8, m, "f32") for m in (1, 2)] == ["float", "mma"]  # run 124
    no_mma = get_target("cuda-sm90").__class__(**{**get_target("cuda-sm90").__dict__, "mma": False})
    assert default_path(no_mma, nf4, 8, "f16") == "float"


@pytest.mark.parametrize("fmt", ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "nf4", "int4", "q2_k", "q4_k", "q5_k", "mxfp4",
                                 "nvfp4"])  # fmt: skip
@pytest.mark.parametrize("m", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_nvidia_opencl_has_rows_of_its_own(fmt, m, dtype):
    """NVIDIA's OpenCL with warps and mma (its own kind of device) follows its own rows; an OpenCL
    device without PTX keeps the float path."""
    from qkgen.runtime.paths import device_kind

    t = get_target("opencl-nvidia-sm90")
    assert device_kind(t) == "opencl-nvidia" and device_kind(get_target("opencl-nvidia")) == "opencl"
    row, kind = qkgen.formats.get(fmt), "opencl-nvidia"
    mma = m >= (FASTER_MMA_F32 if dtype == "f32" else FASTER_MMA)[kind].get(fmt, 9)
    int8mma = m >= FASTER_INT8MMA[(kind, dtype == "f32")].get(fmt, 9)
    int8dot = fmt in FASTER_INT8DOT.get((kind, m > 1, dtype == "f32"), frozenset())
    want = "mma" if mma else "int8mma" if int8mma else "int8dot" if int8dot else "float"
    assert default_path(t, row, m, dtype) == want
    assert default_path(get_target("opencl-nvidia"), row, m, dtype) == "float"
    if m == 1:  # measured: float wins at M = 1 there but for three super-block rows' int8dot path (run 110)
        assert want == ("int8dot" if fmt in ("q3_k", "q5_k", "q6_k") and dtype != "f32" else "float")


def test_default_call_on_opencl_is_the_float_path(rng):
    qt = qkgen.quantize(rng.standard_normal((33, 256)).astype(np.float32), "q5_1")
    x = rng.standard_normal((2, 256)).astype(np.float32)
    np.testing.assert_array_equal(qkgen.gemv(qt, x, backend="opencl"), qkgen.gemv(qt, x, path="float", backend="opencl"))


def test_mma_knobs_two_tiles_with_f32_x_at_m8():
    """runtime.paths' gemv_mma knobs: two tiles a warp with f32 x from M = 8 on CUDA (the plan's
    kernel says so); the op's one tile below that, with f16 x and on other kinds of device."""
    from qkgen.runtime.paths import MMA_KNOBS, mma_knobs

    cuda, ocl = get_target("cuda-sm90"), get_target("opencl-nvidia-sm90")
    mma = set(qkgen.kernels.ops.get_op("gemv_mma").formats())
    for key, rows in MMA_KNOBS.items():
        assert set(rows) <= mma and all(1 <= m <= 8 for m, _ in rows.values()), key
    nf4 = qkgen.formats.get("nf4")
    assert mma_knobs(cuda, nf4, 8, "f32") == {"tiles": 2}
    assert mma_knobs(cuda, nf4, 7, "f32") == {} == mma_knobs(cuda, nf4, 8, "f16") == mma_knobs(ocl, nf4, 8, "f32")
    assert mma_knobs(cuda, qkgen.formats.get("q4_0"), 8, "f32") == {}
    name = qkgen.render("gemv_mma", "nf4", cuda, dtype="f32", nested=True, **mma_knobs(cuda, nf4, 8, "f32")).name
    assert "tiles2" in name


def test_round_x_first_from_m2_on_cuda():
    """runtime.paths.MMA_ROUND_X (H100, runs 123 and 128): on CUDA the mma path rounds f32 x once, in
    a launch of its own, from M = 2 for the rows that take that path with f32 x, on NVIDIA's OpenCL
    from M = 4 for nf4; never at M = 1 or on other devices."""
    from qkgen.runtime.paths import MMA_ROUND_X, default_round_x

    cuda, ocl = get_target("cuda-sm90"), get_target("opencl-nvidia-sm90")
    mma = set(qkgen.kernels.ops.get_op("gemv_mma").formats())
    for kind, rows in MMA_ROUND_X.items():
        assert set(rows) <= mma and all(1 <= m <= 8 for m in rows.values()), kind
    for name in ("nf4", "fp4", "int4", "int8", "blockwise8"):
        fmt = qkgen.formats.get(name)
        assert [default_round_x(cuda, fmt, m) for m in (1, 2, 8)] == [False, True, True], name
        assert default_round_x(ocl, fmt, 8) == (name == "nf4")  # NVIDIA's OpenCL: nf4 from M = 4 (run 128)
    assert [default_round_x(ocl, qkgen.formats.get("nf4"), m) for m in (3, 4)] == [False, True]
    assert not default_round_x(get_target("opencl-intel-gpu"), qkgen.formats.get("nf4"), 8)
    assert not default_round_x(cuda, qkgen.formats.get("q4_0"), 8)  # its f32 x takes int8mma


def test_nvidia_opencl_f16_rows_follow_run_101():
    """NVIDIA's OpenCL with f16 x (H200, run 101): the mma path for q4_0 from M = 2, int8dot for
    q5_0 at every M > 1, int8mma for q8_0 from M = 4 and q5_1 at M = 8, the float path at M = 1."""
    t = get_target("opencl-nvidia-sm90")
    want = {"q4_0": ("float", "mma", "mma", "mma"), "q5_0": ("float", "int8dot", "int8dot", "int8dot"),
            "q8_0": ("float", "int8dot", "int8mma", "int8mma"), "q5_1": ("float", "int8dot", "int8dot", "int8mma")}
    for fmt, paths in want.items():
        got = tuple(default_path(t, qkgen.formats.get(fmt), m, "f16") for m in (1, 2, 4, 8))
        assert got == paths, fmt


@pytest.mark.parametrize("fmt", ["nf4", "fp4"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_pairs_is_the_default_for_large_bitsandbytes_weights_at_m1_on_cuda(fmt, dtype):
    row, cuda = qkgen.formats.get(fmt), get_target("cuda-sm90")
    assert default_path(cuda, row, 1, dtype, 8192, 8192) == "pairs"
    assert default_path(cuda, row, 1, dtype, 4096, 14336) == "pairs"
    # small weights, no shape given, M > 1, f32 x, other devices: not pairs
    assert default_path(cuda, row, 1, dtype, 2048, 8192) == "float"
    assert default_path(cuda, row, 1, dtype, 4096, 4096) == "float"
    assert default_path(cuda, row, 1, dtype) == "float"
    assert default_path(cuda, row, 2, dtype, 8192, 8192) != "pairs"
    assert default_path(cuda, row, 1, "f32", 8192, 8192) != "pairs"
    assert default_path(get_target("opencl-intel-gpu"), row, 1, "f16", 8192, 8192) == "float"
    # int4 takes the mma path's pair table from M = 1 with 16-bit x (run 184), the float path with f32 x
    int4 = qkgen.formats.get("int4")
    assert default_path(cuda, int4, 1, dtype, 8192, 8192) == "mma" and default_path(cuda, int4, 1, "f32") == "float"


@pytest.mark.parametrize("n, slices", [(4096, 4), (6144, 2), (8192, 2), (11008, 1), (14336, 1), (28672, 1)])
def test_pairs_knobs_take_about_one_wave(n, slices):
    # the slices sweep 64 measured fastest on an H200 (132 multiprocessors) for these row counts
    assert pairs_knobs(get_target("cuda-sm90"), n, 132) == {"rpw": 4, "slices": slices, "wg": 256}
    assert pairs_knobs(get_target("cuda-sm90"), n, None) == {}  # the device did not say
    assert pairs_knobs(get_target("opencl-intel-gpu"), n, 132) == {}
