"""Interop with files and frameworks outside qkgen.

    qkgen.interop.gguf      load(path) / write(path, tensors, metadata): GGUF files as QTensors
    qkgen.interop.llama     GGUF tensor names -> transformers Llama module names (and the
                            attn_q/attn_k row order llama.cpp uses)
    qkgen.interop.lookup    embedding(qt, ids): dequantize the rows named by token ids
    qkgen.interop.device    moving a QTensor's arrays to a device and back

Submodules load on first use, so `import qkgen` stays light (gguf is only needed for files).
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("gguf", "llama", "lookup", "device")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_SUBMODULES)
