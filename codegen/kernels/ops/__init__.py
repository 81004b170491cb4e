"""The op registry: every kernel family qkgen generates, one OpSpec each."""

from __future__ import annotations

from types import MappingProxyType

from ...errors import QKGenValueError
from . import (dequantize, embedding, exact_sum, gemv, int8dot, int8frag, int8frag_sub, int8mma, int8mma_sub, mma, quantize,
               repack, round_f16)
from .spec import MAX_M, OpSpec, Output, Request

OPS: MappingProxyType[str, OpSpec] = MappingProxyType(
    {s.name: s for s in (dequantize.SPEC, gemv.SPEC, int8dot.QUANTIZE_Q8_1, int8dot.GEMV_INT8DOT, int8mma.SPEC, int8frag.GEMV_INT8FRAG,
                         int8mma_sub.SPEC, int8frag_sub.GEMV_INT8FRAG_SUB, mma.SPEC, embedding.SPEC,
                         quantize.QUANTIZE_STATS, quantize.QUANTIZE, quantize.QUANTIZE_BLOCKWISE,
                         repack.SPEC, int8frag.REPACK_FRAGMENTS, int8frag_sub.REPACK_FRAGMENTS_SUB, exact_sum.SPEC,
                         round_f16.SPEC)}
)


def get_op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except (KeyError, TypeError):
        raise QKGenValueError(f"op: unknown op {name!r}; allowed: {', '.join(OPS)}") from None


def ops() -> tuple[str, ...]:
    return tuple(OPS)


__all__ = ["OPS", "OpSpec", "Output", "Request", "MAX_M", "get_op", "ops"]
