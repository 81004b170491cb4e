"""round_to_f16: f32 activations x [M, K] rounded to f16 once, two to a 32-bit word.

The mma path multiplies in f16 and rounds f32 x to f16 as it loads it. Every work-group reads all
of x, so at M = 8 (4096 x 14336) its f32 x is twice the weight's bytes again from L2, every
group converting the same values. Rounding x once first, then running gemv_mma on the f16 words
(its `x_rounded` form, which still writes f32 y), gives the same products: the same rounding of
the same values by the same dialect helper (pack_x2), so y is bit for bit the one-kernel path's.

Value 2i goes to the low half of word i, as gemv_mma reads 16-bit x. K is a multiple of gemv_mma's
32-element chunk, so M * K is even and a row's words never straddle rows.
"""

from __future__ import annotations

import numpy as np

from ..source import Arg
from .spec import OpSpec, Output, Request, grid_1d

MAX_VALUES = (1 << 32) - 2  # values one launch takes: M * K in a uint, pairs from 0


def round_reference(x: np.ndarray) -> np.ndarray:
    """The reference words: x's values as f16 (round to nearest even), value 2i in the low half of
    word i, as uint32."""
    with np.errstate(over="ignore"):  # past f16's range: inf, as the kernels round it
        h = np.ascontiguousarray(np.asarray(x, dtype=np.float32).reshape(-1).astype(np.float16))
    return h.view(np.uint32)


def _context(req: Request) -> dict:
    wg = req.pop_wg(256, 1)
    args = [Arg("x", "in", "f32"), Arg("xh", "out", "u32"), Arg("M", "scalar", "u32"), Arg("K", "scalar", "u32")]
    return dict(args=args, wg=wg)


def _grid(ks, sizes: dict):
    return grid_1d(sizes["M"] * sizes["K"] // 2, ks.wg)


SPEC = OpSpec(
    name="round_to_f16", template="round_to_f16.jinja",
    doc="f32 activations -> f16 pairs, rounded once (the mma path's x from M where that is faster)",
    context=_context, grid=_grid, dtypes=("f32",), format_free=True, grid_role="feeds_next",
    outputs=(Output("xh", "u32", lambda s: s["M"] * s["K"] // 2),),
    reference=round_reference,
)  # fmt: skip
