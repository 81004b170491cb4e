"""replace_linear: swap a model's nn.Linear layers for QuantLinear.

Without weights, each layer's own float weight is quantized to `format`. With weights (a mapping
of GGUF tensor names, e.g. qkgen.interop.gguf.load(path)), each layer takes its GGUF tensor by
the Llama name map (qkgen.interop.llama), attn_q/attn_k in transformers' row order; a tied
lm_head takes token_embd. Every layer is matched and checked before any is replaced.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import QKGenValueError
from ..formats import QTensor
from ..interop import llama
from .linear import QuantLinear


def _skipper(skip: Any) -> Callable[[str], bool]:
    if callable(skip):
        return lambda name: bool(skip(name))
    if isinstance(skip, str):
        skip = (skip,)
    if not isinstance(skip, Iterable) or not all(isinstance(s, str) for s in skip):
        raise QKGenValueError(f"skip: {skip!r}; allowed: module name patterns (fnmatch) or a callable(name)")
    pats = tuple(skip)
    return lambda name: any(fnmatch.fnmatchcase(name, p) for p in pats)


def _heads(model: nn.Module, weights: Mapping) -> tuple[int | None, int | None]:
    cfg = getattr(model, "config", None)
    meta = getattr(weights, "metadata", {}) or {}
    n_head = getattr(cfg, "num_attention_heads", None) or meta.get("llama.attention.head_count")
    n_kv = getattr(cfg, "num_key_value_heads", None) or meta.get("llama.attention.head_count_kv")
    return n_head, n_kv


def _source(name: str, weights: Mapping) -> str | None:
    g = llama.gguf_name(name)
    if name == "lm_head" and g not in weights and "token_embd.weight" in weights:
        return "token_embd.weight"  # tied output: the embedding table, through the GEMV
    return g if g in weights else None


def _from_weights(linears, weights: Mapping, model, format, opts) -> dict[str, nn.Module]:
    missing = [(n, llama.gguf_name(n)) for n, _ in linears if _source(n, weights) is None]
    if missing:
        shown = ", ".join(f"{n} (looked for {g or 'no GGUF name'})" for n, g in missing[:4])
        raise QKGenValueError(f"weights: no tensor for {len(missing)} layer(s): {shown}; allowed: GGUF Llama names "
                              "(blk.N.attn_q.weight, ...), or skip= for layers to leave as they are")  # fmt: skip
    n_head, n_kv = _heads(model, weights)
    out = {}
    for name, mod in linears:
        src = _source(name, weights)
        t = weights[src]
        if tuple(t.shape) != (mod.out_features, mod.in_features):
            raise QKGenValueError(f"weights[{src!r}]: shape {list(t.shape)} for {name} [{mod.out_features}, "
                                  f"{mod.in_features}]; allowed: the layer's [out_features, in_features]")  # fmt: skip
        if llama.heads_for(src, 1, 1) is not None:
            if not n_head:
                raise QKGenValueError("model: no config.num_attention_heads and weights have no head count; allowed: "
                                      "a transformers Llama model or GGUF weights with their metadata")  # fmt: skip
            t = llama.to_hf_order(src, t, n_head, n_kv)
        bias_name = src[: -len("weight")] + "bias"
        bias = weights.get(bias_name, mod.bias)
        bias = torch.from_numpy(np.asarray(bias, np.float32)) if isinstance(bias, np.ndarray) else bias
        if isinstance(t, QTensor):
            out[name] = QuantLinear.from_gguf(t, bias, **opts)
        elif format is not None:
            from ..runtime.quantize import quantize

            out[name] = QuantLinear(quantize(np.asarray(t, np.float32), format), bias, **opts)
        else:  # a float GGUF tensor stays a float layer, with the file's values
            lin = nn.Linear(mod.in_features, mod.out_features, bias=bias is not None)
            lin.weight.data = torch.from_numpy(np.asarray(t, np.float32).copy())
            if bias is not None:
                lin.bias.data = torch.as_tensor(bias, dtype=torch.float32).clone()
            out[name] = lin
    return out


def replace_linear(model: nn.Module, weights: Mapping[str, Any] | None = None, format: Any = None, skip: Any = (),
                   backend: str | None = None, device: Any = None) -> nn.Module:  # fmt: skip
    """Replace every nn.Linear of `model` (but those `skip` names: fnmatch patterns or a callable)
    with a QuantLinear, in place; returns the model. weights=None: quantize each layer's weight
    to `format`. weights: a GGUF name -> QTensor/array mapping (float tensors are quantized to
    `format` when one is given, else kept as float layers). backend/device: for CPU tensors."""
    if not isinstance(model, nn.Module):
        raise QKGenValueError(f"model: {type(model).__name__}; allowed: a torch.nn.Module")
    skipped = _skipper(skip)
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear) and not skipped(n)]
    opts = {"backend": backend, "device": device}
    if weights is None:
        if format is None:
            raise QKGenValueError("format: None; allowed: a format name (e.g. 'q4_1', 'nf4') when weights is None")
        new = {n: QuantLinear.from_float(m, format, **opts) for n, m in linears}
    elif not isinstance(weights, Mapping):
        raise QKGenValueError(f"weights: {type(weights).__name__}; allowed: None or a mapping of GGUF tensor names")
    else:
        new = _from_weights(linears, weights, model, format, opts)
    for name, mod in new.items():
        parent, _, leaf = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, leaf, mod)
    return model
