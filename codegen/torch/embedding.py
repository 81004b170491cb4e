"""QuantEmbedding: an nn.Embedding whose table is a QTensor (a GGUF token_embd), looked up by the
embedding kernel family: only the rows asked for are dequantized, bit-equal to dequantize."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..errors import QKGenValueError
from ..formats import QTensor
from . import ops, place
from .weights import QuantWeight


class QuantEmbedding(nn.Module):
    def __init__(self, qt: QTensor, dtype: torch.dtype = torch.float32, backend: str | None = None,
                 device: Any = None):  # fmt: skip
        super().__init__()
        if not isinstance(qt, QTensor) or len(qt.shape) != 2:
            raise QKGenValueError(f"qt: {getattr(qt, 'shape', type(qt).__name__)}; allowed: a 2-D QTensor [rows, D]")
        if dtype not in place.FLOATS:
            raise QKGenValueError(f"dtype: {dtype}; allowed: torch.float32, torch.float16, torch.bfloat16")
        self.num_embeddings, self.embedding_dim = qt.shape
        self.dtype = dtype
        self.weight_q = QuantWeight(qt, backend, device)

    @property
    def qtensor(self) -> QTensor:
        return self.weight_q.qt

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ops.check_ids(ids, self.num_embeddings, values=False)  # values: in the op
        return torch.ops.qkgen.embedding(ids, self.weight_q.handle, self.dtype)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, table={self.qtensor.describe()}"
