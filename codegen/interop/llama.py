"""GGUF tensor names <-> transformers Llama names, and llama.cpp's rotary row order.

llama.cpp's converter reorders the rows of attn_q and attn_k: within each head it interleaves the
two rotary halves (HF row h*hd + i*hd/2 + j becomes GGUF row h*hd + 2j + i) because ggml rotates
adjacent pairs. `hf_rows` is the index that undoes it: hf = gguf[hf_rows(...)] (take_rows).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import QKGenValueError

# GGUF stem (after "blk.{i}." for layers) -> transformers module path (".weight" follows both).
GLOBAL = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
LAYER = {
    "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}  # fmt: skip
_HF_LAYER = {v: k for k, v in LAYER.items()}
_HF_GLOBAL = {v: k for k, v in GLOBAL.items()}
_BLK = re.compile(r"^blk\.(\d+)\.(\w+)\.(weight|bias)$")
_HF = re.compile(r"^model\.layers\.(\d+)\.(.+)$")


def hf_name(gguf_name: str) -> str | None:
    """The transformers parameter name of a GGUF tensor name, or None if it has none."""
    m = _BLK.match(gguf_name)
    if m:
        stem = LAYER.get(m.group(2))
        return f"model.layers.{m.group(1)}.{stem}.{m.group(3)}" if stem else None
    base, _, kind = gguf_name.rpartition(".")
    return f"{GLOBAL[base]}.{kind}" if base in GLOBAL and kind in ("weight", "bias") else None


def gguf_name(module: str, kind: str = "weight") -> str | None:
    """The GGUF tensor name of a transformers module path (e.g. model.layers.0.self_attn.q_proj)."""
    m = _HF.match(module)
    if m:
        stem = _HF_LAYER.get(m.group(2))
        return f"blk.{m.group(1)}.{stem}.{kind}" if stem else None
    stem = _HF_GLOBAL.get(module)
    return f"{stem}.{kind}" if stem else None


def hf_rows(n_rows: int, n_head: int) -> np.ndarray:
    """Row r of the transformers weight is row hf_rows(...)[r] of llama.cpp's attn_q / attn_k."""
    if n_head < 1 or n_rows % (2 * n_head):
        raise QKGenValueError(f"n_head: {n_head} heads do not split {n_rows} rows into rotary pairs; allowed: "
                              "a head count whose head size is even")  # fmt: skip
    hd = n_rows // n_head
    h, i, j = np.meshgrid(np.arange(n_head), np.arange(2), np.arange(hd // 2), indexing="ij")
    return (h * hd + 2 * j + i).reshape(-1)


def heads_for(name: str, n_head: int, n_head_kv: int | None) -> int | None:
    """How many heads the rotary reorder of tensor `name` (a GGUF name) uses; None: no reorder."""
    m = _BLK.match(name)
    if not m or m.group(2) not in ("attn_q", "attn_k"):
        return None
    return n_head if m.group(2) == "attn_q" else (n_head_kv or n_head)


def to_hf_order(name: str, tensor: Any, n_head: int, n_head_kv: int | None) -> Any:
    """A GGUF tensor in transformers' row order (attn_q/attn_k reordered; others as they are)."""
    heads = heads_for(name, n_head, n_head_kv)
    if heads is None:
        return tensor
    index = hf_rows(int(tensor.shape[0]), heads)
    return tensor.take_rows(index) if hasattr(tensor, "take_rows") else np.ascontiguousarray(tensor[index])
