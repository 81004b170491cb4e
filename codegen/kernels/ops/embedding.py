"""embedding: out[t, :] = dequantize(W)[ids[t], :], the rows of a quantized table named by token
ids. Each work-item decodes one chunk of `ept` elements of one row, exactly as dequantize decodes
it (the same decode macros and chunking), so the rows are bit-equal to dequantize's. A row must
hold whole chunks (K a multiple of ept: the caller picks ept), so no chunk straddles two rows."""

from __future__ import annotations

from ...formats import reference as ref
from ..source import Arg
from .dequantize import chunk_code_at, chunk_start, chunking, decodes
from .spec import OpSpec, Output, Request, grid_1d, table_locals, weight_args


def embedding_reference(qt, ids):
    """The reference rows: the dequantized table [rows, K] indexed by ids."""
    return ref.dequantize(qt).reshape(qt.rows, qt.cols)[ids]


def _context(req: Request) -> dict:
    ept, chunk_bytes, align = chunking(req)
    tables, local_arrays = table_locals(req)
    args = weight_args(req) + [Arg("ids", "in", "u32"), Arg("out", "out", req.dtype), Arg("T", "scalar", "u32"),
                               Arg("cols", "scalar", "u32"), Arg("rows", "scalar", "u32")]  # fmt: skip
    if req.scale_mode == "group":
        args.append(Arg("groups_per_row", "scalar", "u32"))
    return dict(ept=ept, chunk_bytes=chunk_bytes, code_align=align, code_at=chunk_code_at(req, ept), tables=tables,
                at=chunk_start(req, ept), args=args + local_arrays, wg=req.pop_wg(128, 1))  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    items = sizes["T"] * sizes["cols"] // ks.param("ept")
    return grid_1d(items, ks.wg)


SPEC = OpSpec(
    name="embedding", template="embedding.jinja", doc="rows of a quantized table by token id -> values",
    context=_context, grid=_grid, outputs=(Output("out", "dtype", lambda s: s["T"] * s["cols"]),),
    reference=embedding_reference, accepts=decodes,
)  # fmt: skip
