"""qkgen.torch (issue 12 item 3): QuantLinear on CPU tensors (OpenCL CPU device), every batch
shape and dtype, the many-rows cache, torch.compile(fullgraph=True), constructors, replace_linear
with the Llama name map, and bad input named before any launch."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import qkgen  # noqa: E402
from qkgen.errors import QKGenValueError  # noqa: E402
from qkgen.formats import reference as ref  # noqa: E402
from qkgen.torch import QuantEmbedding, QuantLinear, dequant_cache_info, replace_linear  # noqa: E402

DT = [torch.float32, torch.float16, torch.bfloat16]


def dense(q):
    return torch.from_numpy(ref.dequantize(q.qtensor))


@pytest.mark.parametrize("dtype", DT, ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape", [(64,), (3, 64), (2, 4, 64), (20, 64)], ids=["1d", "m3", "batch", "m20"])
def test_forward_matches_dequantized_matmul(dtype, shape):
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 40)
    q = QuantLinear.from_float(lin, "q4_1", backend="opencl", device="Intel")
    x = torch.randn(*shape).to(dtype)
    y = q(x)
    want = x.float() @ dense(q).T + lin.bias.detach()
    assert y.dtype == dtype and y.shape == (*shape[:-1], 40)
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype]
    assert torch.allclose(y.float(), want, rtol=tol, atol=tol * 4)


def test_many_rows_use_the_bounded_cache():
    q = QuantLinear.from_float(torch.nn.Linear(64, 32, bias=False), "nf4", backend="opencl", device="Intel")
    before = dequant_cache_info()
    q(torch.randn(12, 64))
    after = dequant_cache_info()
    assert after["entries"] >= 1 and after["bytes"] <= after["limit"]
    assert after["bytes"] - before["bytes"] in (0, 32 * 64 * 4)


def test_torch_compile_fullgraph_captures_the_ops():
    lin = QuantLinear.from_float(torch.nn.Linear(64, 32), "q8_0", backend="opencl", device="Intel")
    emb = QuantEmbedding(qkgen.quantize(np.random.randn(50, 64).astype(np.float32), "q4_0"), backend="opencl",
                         device="Intel")  # fmt: skip

    def f(ids):
        return lin(emb(ids)).relu()

    ids = torch.tensor([[3, 7, 49]])
    compiled = torch.compile(f, fullgraph=True)
    assert torch.allclose(compiled(ids), f(ids))


def test_embedding_rows_bit_equal():
    qt = qkgen.quantize(np.random.randn(30, 64).astype(np.float32), "q5_1")
    emb = QuantEmbedding(qt, backend="opencl", device="Intel")
    ids = torch.tensor([[0, 29], [5, 5]])
    assert torch.equal(emb(ids), torch.from_numpy(ref.dequantize(qt))[ids])
    assert emb(ids.to(torch.int32)).shape == (2, 2, 64)


def test_from_bnb():
    bnb = pytest.importorskip("bitsandbytes")
    lin = bnb.nn.Linear4bit(64, 32, bias=True, quant_type="nf4", compute_dtype=torch.float32)
    lin.load_state_dict(torch.nn.Linear(64, 32).state_dict())
    lin = lin.to("cpu")
    if getattr(lin.weight, "quant_state", None) is None:
        lin.weight = bnb.nn.Params4bit(lin.weight.data, requires_grad=False, quant_type="nf4")._quantize("cpu")
    q = QuantLinear.from_bnb(lin, backend="opencl", device="Intel")
    x = torch.randn(2, 64)
    assert torch.allclose(q(x), x @ dense(q).T + lin.bias.detach(), atol=1e-4)


def llama_like():
    class Attn(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj, self.k_proj = torch.nn.Linear(64, 64, bias=False), torch.nn.Linear(64, 32, bias=False)

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = Attn()

    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Layer()])

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model, self.lm_head = Inner(), torch.nn.Linear(64, 10, bias=False)

    m = Model()
    m.config = type("C", (), {"num_attention_heads": 4, "num_key_value_heads": 2})()
    return m


def permute(w, n_head):
    """llama.cpp's converter's reorder of attn_q/attn_k rows (from its definition)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_replace_linear_with_gguf_names_undoes_the_rotary_order():
    m = llama_like()
    wq, wk = (mod.weight.detach().numpy() for mod in (m.model.layers[0].self_attn.q_proj, m.model.layers[0].self_attn.k_proj))
    weights = {"blk.0.attn_q.weight": qkgen.quantize(permute(wq, 4), "q8_0"),
               "blk.0.attn_k.weight": qkgen.quantize(permute(wk, 2), "q8_0"),
               "token_embd.weight": qkgen.quantize(np.random.randn(10, 64).astype(np.float32), "q8_0")}  # fmt: skip
    replace_linear(m, weights, backend="opencl", device="Intel")
    q = m.model.layers[0].self_attn.q_proj
    assert isinstance(q, QuantLinear) and isinstance(m.lm_head, QuantLinear)  # tied: token_embd
    assert np.allclose(ref.dequantize(q.qtensor), wq, atol=np.abs(wq).max() / 100)
    k = m.model.layers[0].self_attn.k_proj
    assert np.allclose(ref.dequantize(k.qtensor), wk, atol=np.abs(wk).max() / 100)


def test_replace_linear_quantizes_and_skips():
    m = llama_like()
    replace_linear(m, format="q4_0", skip=["lm_head"], backend="opencl", device="Intel")
    assert isinstance(m.model.layers[0].self_attn.q_proj, QuantLinear)
    assert type(m.lm_head) is torch.nn.Linear


def test_replace_linear_bad_input():
    with pytest.raises(QKGenValueError, match="weights: no tensor for 3 layer"):
        replace_linear(llama_like(), {"blk.9.attn_q.weight": None})
    with pytest.raises(QKGenValueError, match="format: None"):
        replace_linear(llama_like())
    with pytest.raises(QKGenValueError, match="model"):
        replace_linear(object(), format="q4_0")
    with pytest.raises(QKGenValueError, match="skip"):
        replace_linear(llama_like(), format="q4_0", skip=[1])
    bad = {"blk.0.attn_q.weight": qkgen.quantize(np.zeros((32, 64), np.float32), "q8_0")}
    with pytest.raises(QKGenValueError, match=r"weights\['blk.0.attn_q.weight'\]: shape \[32, 64\]"):
        replace_linear(llama_like(), bad, skip=["*k_proj", "lm_head"])


def test_forward_bad_input():
    q = QuantLinear.from_float(torch.nn.Linear(64, 32), "q4_0", backend="opencl", device="Intel")
    with pytest.raises(QKGenValueError, match=r"x\.shape: \[2, 63\]; allowed: \[\.\.\., 64\]"):
        q(torch.randn(2, 63))
    with pytest.raises(QKGenValueError, match="x.dtype: torch.float64"):
        q(torch.randn(2, 64, dtype=torch.float64))
    with pytest.raises(QKGenValueError, match="x: ndarray"):
        q(np.zeros((2, 64), np.float32))
    with pytest.raises(QKGenValueError, match="linear"):
        QuantLinear.from_float(torch.nn.Conv1d(1, 1, 1), "q4_0")
    with pytest.raises(QKGenValueError, match="backend"):
        QuantLinear(qkgen.quantize(np.zeros((4, 32), np.float32), "q4_0"), backend="cuda")
    with pytest.raises(QKGenValueError, match="bias"):
        QuantLinear(qkgen.quantize(np.zeros((4, 32), np.float32), "q4_0"), bias=torch.zeros(5))
    with pytest.raises(QKGenValueError, match="module"):
        QuantLinear.from_bnb(torch.nn.Linear(4, 4))
    emb = QuantEmbedding(qkgen.quantize(np.zeros((4, 32), np.float32), "q4_0"), backend="opencl", device="Intel")
    with pytest.raises(QKGenValueError, match=r"ids: values in 0\.\.4; allowed: 0\.\.3"):
        emb(torch.tensor([0, 4]))
    with pytest.raises(QKGenValueError, match="ids"):
        emb(torch.tensor([0.5]))


def test_import_qkgen_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, qkgen, qkgen.interop; assert 'torch' not in sys.modules, 'torch imported'"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
