"""dequantize's prefetch knob: each work-item asks L2 for its codes of every turn before the barrier
that follows the tables' setup. Rendering only (no device): where it is on by default, where it is
refused, and that the request is guarded at the tensor's end. CUDA's builds are compiled by
test_cuda_compile and run, bit-equal to the reference, in the GPU suite."""

import pytest

from qkgen.errors import QKGenValueError
from qkgen.kernels.render import render

PREFETCH = 'asm volatile("prefetch.global.L2 [%0];"'


def _dequantize(fmt, target, **kw):
    kw.setdefault("dtype", "bf16")
    return render("dequantize", fmt, target, **kw)


@pytest.mark.parametrize("fmt,kw", [("nf4", {"nested": True}), ("fp4", {}), ("blockwise8", {"blocksize": 256})])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_on_by_default_for_table_rows_with_16_bit_outputs_on_cuda(fmt, kw, dtype):
    ks = _dequantize(fmt, "cuda-sm90", dtype=dtype, **kw)
    assert ks.param("prefetch") is True and ks.param("cpi") == 4
    src = ks.source
    ask, barrier = src.index(PREFETCH), src.index("__syncthreads();")
    assert ask < barrier < src.index("const size_t chunk0")  # asked before the barrier, decoded after
    # every turn's chunk, and nothing asked for past the tensor's n elements
    assert "for (uint chunk = 0; chunk < 4u; ++chunk)" in src[:ask]
    assert "if (e0 < n) " + PREFETCH in src


@pytest.mark.parametrize("fmt,kw", [("nf4", {"nested": True}), ("fp4", {}), ("int4", {"scale_mode": "row"})])
def test_f32_outputs_store_16_bytes_a_chunk_and_take_no_prefetch(fmt, kw):
    """An f32 chunk is one 16-byte store: 4 elements, for 4-bit codes 2 bytes in one 16-bit load."""
    ks = _dequantize(fmt, "cuda-sm90", dtype="f32", **kw)
    assert (ks.param("ept"), ks.param("cpi")) == (4, 4) and not ks.param("prefetch") and PREFETCH not in ks.source
    assert "w[0] = (uint)((const ushort*)cp)[0];" in ks.source and "[1] = make_float4" not in ks.source
    if fmt == "nf4":  # asked for, it renders: slower there (run 172), not wrong
        assert _dequantize(fmt, "cuda-sm90", dtype="f32", prefetch=True, **kw).param("prefetch") is True


def test_gemv_keeps_whole_words():
    with pytest.raises(QKGenValueError, match=r"ept: 4 must divide .* whole 32-bit words of codes$"):
        render("gemv", "nf4", "cuda-sm90", dtype="f16", mmax=1, ept=4)


@pytest.mark.parametrize("target", ["opencl-nvidia", "opencl-intel-gpu", "sycl-intel-gpu", "pocl"])
def test_off_where_the_dialect_has_no_spelling(target):
    ks = _dequantize("nf4", target, nested=True)
    assert not ks.param("prefetch") and "prefetch" not in ks.source
    with pytest.raises(QKGenValueError, match=r"prefetch: True .* allowed: True only .*CUDA"):
        _dequantize("nf4", target, nested=True, prefetch=True)


@pytest.mark.parametrize("fmt,kw", [("q4_0", {}), ("int4", {"scale_mode": "row"}), ("nf4", {"cpi": 1})])
def test_refused_without_a_codes_array_tables_or_turns(fmt, kw):
    assert not _dequantize(fmt, "cuda-sm90", **kw).param("prefetch")
    with pytest.raises(QKGenValueError, match=r"prefetch: True for .*; allowed: True only for rows with a codes"):
        _dequantize(fmt, "cuda-sm90", prefetch=True, **kw)
