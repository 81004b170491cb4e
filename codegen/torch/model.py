"""A transformers Llama model built from a GGUF file with every linear layer and the token
embedding on qkgen: the float weights of the file (norms) are copied, nothing is dequantized
up front. Used by `qkgen generate` and the real-model tests."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import QKGenValueError
from ..formats import QTensor
from ..interop import gguf, llama
from .embedding import QuantEmbedding
from .replace import replace_linear

ARCHITECTURES = ("llama",)


def _say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(path)), gguf_file=os.path.basename(path))


def load_llama(path: Any, backend: str | None = None, device: Any = None, progress: bool | None = None):
    """(model, tokenizer) for a Llama-family GGUF file. backend/device: where CPU tensors run
    (opencl or sycl); backend "cuda" puts the model on that GPU. progress: lines on stderr
    (default: when stderr is a terminal)."""
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    progress = sys.stderr.isatty() if progress is None else progress
    if not progress:
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    _say(progress, f"qkgen: mapping {path}")
    tensors = gguf.load(path)
    arch = tensors.metadata.get("general.architecture")
    if arch not in ARCHITECTURES:
        raise QKGenValueError(f"model: {path} is a {arch!r} model; allowed architectures: {', '.join(ARCHITECTURES)}")
    folder, name = os.path.dirname(os.path.abspath(path)), os.path.basename(path)
    _say(progress, "qkgen: reading the config and tokenizer")
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    tokenizer = load_tokenizer(path)
    _say(progress, f"qkgen: building the model ({len(tensors)} tensors)")
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    cpu_opts = {"backend": None if backend == "cuda" else backend, "device": None if backend == "cuda" else device}
    replace_linear(model, tensors, **cpu_opts)
    table = tensors["token_embd.weight"]
    if isinstance(table, QTensor):
        model.model.embed_tokens = QuantEmbedding(table, **cpu_opts)
    else:
        model.model.embed_tokens = nn.Embedding.from_pretrained(torch.from_numpy(np.array(table, np.float32)))
    _load_floats(model, tensors)
    rotary = model.model.rotary_emb
    model.model.rotary_emb = type(rotary)(config=config)  # built on the CPU, not meta
    left = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    if left:
        raise QKGenValueError(f"model: {len(left)} tensor(s) have no weights in {path} ({', '.join(left[:3])}); "
                              "allowed: GGUF files with the Llama tensor names")  # fmt: skip
    model.eval()
    if backend == "cuda":
        model.to(f"cuda:{device or 0}" if isinstance(device, int) or (device or "").isdigit() else "cuda")
    _say(progress, "qkgen: model ready")
    return model, tokenizer


def _load_floats(model: nn.Module, tensors) -> None:
    """The file's float parameters (norm weights) copied into the meta model's parameters."""
    for name, param in list(model.named_parameters()):
        if not param.is_meta:
            continue
        module, _, kind = name.rpartition(".")
        src = llama.gguf_name(module, kind)
        if src is None or src not in tensors or isinstance(tensors[src], QTensor):
            continue
        value = torch.from_numpy(np.array(tensors[src], np.float32))
        if tuple(value.shape) != tuple(param.shape):
            raise QKGenValueError(f"weights[{src!r}]: shape {list(value.shape)}; allowed: {list(param.shape)} ({name})")
        owner = model.get_submodule(module)
        setattr(owner, kind, nn.Parameter(value, requires_grad=False))
