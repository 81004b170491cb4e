"""gemv: y[m, n] = sum_k x[m, k] * W[n, k] for a quantized W, decoded in registers (the float path)."""

from __future__ import annotations

import numpy as np

from ...formats import reference as ref
from ..source import Arg
from .dequantize import chunk_code_at, chunking
from .spec import one_scale_per_block, MAX_M, OpSpec, Output, Request, lanes_of, table_locals, weight_args


def gemv_reference(qt, x: np.ndarray) -> np.ndarray:
    """The float64 product x @ W.T of f32 activations x [M, K] and the dequantized weight."""
    return x.astype(np.float64) @ ref.dequantize(qt).astype(np.float64).T


def _context(req: Request) -> dict:
    fmt, t = req.fmt, req.target
    ept, chunk_bytes, align = chunking(req, whole_blocks=True)
    mmax = req.pop_int("mmax", 1, 1, MAX_M)
    # Rows per lane group: each activation chunk serves them all. Two for 32-element chunks (4-bit
    # codes); one otherwise: on an H100, 4 rows of 16-element chunks (q8_0) left too few warps in
    # flight and took 2x longer at 4096 rows, and 64+ element chunks would hold too many values.
    rpw = req.pop_int("rpw", 2 if ept == 32 else 1, 1, 8)
    fast = req.pop_bool("fast_decode", True) and fmt.code != "table"  # tables decode by lookup anyway
    lanes = lanes_of(t)
    wg = req.pop_wg(128, lanes)
    tables, local_arrays = table_locals(req)
    if not t.subgroups:
        local_arrays.append(Arg("scratch", "local", "f32", count=wg))
    args = weight_args(req) + [Arg("x", "in", "x"), Arg("y", "out", req.dtype), Arg("N", "scalar", "u32"),
                               Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32")]  # fmt: skip
    if req.scale_mode == "group":
        args.append(Arg("groups_per_row", "scalar", "u32"))
    x_size = 4 if req.dtype == "f32" else 2
    return dict(ept=ept, chunk_bytes=chunk_bytes, code_align=align, code_at=chunk_code_at(req, ept), tables=tables,
                args=args + local_arrays, lanes=lanes, groups=wg // lanes, rpw=rpw, mmax=mmax, fast_decode=fast,
                whole=fmt.inline and ept == fmt.block, x_size=x_size, x_bytes=ept * x_size, wg=wg)  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rows = ks.wg // ks.param("lanes") * ks.param("rpw")
    return (-(-sizes["N"] // rows) * ks.wg,), (ks.wg,)


SPEC = OpSpec(
    name="gemv", template="gemv.jinja", doc="y = x @ W.T, W decoded in registers, f32 accumulation",
    context=_context, grid=_grid, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    extra_variants=({"mmax": 1}, {"mmax": MAX_M}), name_params=("mmax",), reference=gemv_reference,
    accepts=one_scale_per_block,
)  # fmt: skip
