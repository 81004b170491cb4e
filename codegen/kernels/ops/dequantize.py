"""dequantize: codes + statistics -> f32/f16/bf16 values, one chunk of `ept` elements per work-item."""

from __future__ import annotations

from ...errors import QKGenValueError
from ...formats import family_of, locate
from ...formats import reference as ref
from ..cexpr import Sym
from ..source import Arg
from .spec import (grid_1d, one_scale_per_block, OpSpec, Output, Request, load_align, low_pow2, table_locals,
                   weight_args)


def chunking(req: Request, whole_blocks: bool = False, cap: int | None = None) -> tuple[int, int, int]:
    """(elements, code bytes, load alignment) of the chunk one work-item decodes at a time: aim
    for 16 bytes of codes (one vector load) inside one block or group (one scale). A split-packed
    chunk stays inside one slot run (its elements share `slot`, each takes its own byte) unless
    `whole_blocks`: then it is the whole block, every byte read once for all its slots. `cap`: at
    most that many elements by default where the format allows (not a whole split block; one word)."""
    fmt = req.fmt
    limit = family_of(fmt).chunk_limit(fmt, req.blocksize, req.scale_mode)
    whole = whole_blocks and fmt.pack == "split" and limit == fmt.block
    run_limit = min(limit, fmt.run) if fmt.pack == "split" else limit
    default = limit if whole else min(16 * fmt.per_byte, run_limit)
    if cap and not whole:
        default = min(default, max(cap, 4 * fmt.per_byte))
    ept = req.pop_int("ept", default, 1, 1 << 16)
    whole = whole and ept == limit  # a smaller chunk asked for stays inside one slot run
    if not whole:
        limit = run_limit
    chunk_bytes = ept // fmt.per_byte if whole or fmt.pack != "split" else ept
    if ept > limit or limit % ept or chunk_bytes % 4 or ept % fmt.per_byte:
        raise QKGenValueError(f"ept: {ept} must divide {limit} and cover whole 32-bit words of codes")
    align = load_align(fmt, "qs", chunk_bytes) if fmt.inline else min(16, low_pow2(chunk_bytes))
    return ept, chunk_bytes, align


def chunk_code_at(req: Request, ept: int) -> tuple[Sym, Sym]:
    """(byte, shift) of chunk element i, from the format's own locate(): the chunk's code bytes are
    one run (for split packing inside one slot run, its elements sharing `slot`, unless the chunk
    is the whole block)."""
    fmt = req.fmt
    i = Sym.var("i", ept)
    e = i + Sym.var("slot", fmt.per_byte) * fmt.run if fmt.pack == "split" and ept <= fmt.run else i
    return locate(fmt, e)


def _context(req: Request) -> dict:
    ept, chunk_bytes, align = chunking(req)
    tables, local_arrays = table_locals(req)
    args = weight_args(req) + [Arg("out", "out", req.dtype), Arg("n", "scalar", "u64")]
    if req.scale_mode in ("row", "group"):
        args += [Arg("cols", "scalar", "u32"), Arg("groups_per_row", "scalar", "u32")]
    return dict(ept=ept, chunk_bytes=chunk_bytes, code_align=align, code_at=chunk_code_at(req, ept), tables=tables,
                args=args + local_arrays, wg=req.pop_wg(256, 1))  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return grid_1d(-(-sizes["n"] // ks.param("ept")), ks.wg)


SPEC = OpSpec(
    name="dequantize", template="dequantize.jinja", doc="codes + statistics -> values (f32, f16, bf16)",
    context=_context, grid=_grid, outputs=(Output("out", "dtype", lambda s: s["n"]),),
    reference=lambda qt: ref.dequantize(qt),
    accepts=one_scale_per_block,
)  # fmt: skip
