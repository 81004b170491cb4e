"""A whole (tiny, synthetic) Llama in K-quant and FP4 GGUF rows, run through qkgen.torch on the Intel
CPU OpenCL device: the GGUF file is written by qkgen's quantizer, loaded back, and every linear
layer and the token embedding take its tensors; logits within 1e-6 NMSE of the fp32 model holding
the same dequantized weights, and the same 16 greedy tokens."""

from __future__ import annotations

import pytest

from qkgen import backends

from .gpu.test_model_gpu import _compare, _qkgen_model, synthetic

pytestmark = pytest.mark.skipif(not backends.get("opencl").is_available(), reason="no OpenCL")


@pytest.mark.parametrize("fmt", ["q4_k", "q6_k", "q3_k", "mxfp4"])
def test_synthetic_llama_in_kquant_rows(tmp_path, fmt):
    pytest.importorskip("transformers")
    model, weights, QE, rl = synthetic(tmp_path, fmt)
    _compare(model, _qkgen_model(model, weights, QE, rl, backend="opencl", device="Intel"), "cpu")
