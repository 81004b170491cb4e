"""qkgen.torch: quantized nn.Modules on qkgen's kernels, registered as torch.library custom ops.

    QuantLinear.from_float(linear, "q4_1") / .from_bnb(linear4bit) / .from_gguf(qtensor)
    QuantEmbedding(qtensor)                      token id -> row, through the embedding kernels
    replace_linear(model, weights=None, format=None, skip=())

Importing this package imports torch; `import qkgen` does not.
"""

from __future__ import annotations

from .embedding import QuantEmbedding
from .linear import QuantLinear
from .replace import replace_linear
from .weights import CACHE_BYTES, dequant_cache_info

__all__ = ["QuantLinear", "QuantEmbedding", "replace_linear", "CACHE_BYTES", "dequant_cache_info"]
