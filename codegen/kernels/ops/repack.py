"""repack_planes: an inline block row's blocks -> its planes layout (formats.layout), on the device.

The int8dot GEMV reads a weight in planes (layout "planes") to load a block's codes with the widest
loads their 16-byte aligned plane allows; this kernel makes that copy once per weight and device.
Fields are copied as the row lists them: no format is named, every inline row renders.
"""

from __future__ import annotations

from ...formats.layout import field_planes
from ...formats.layout import to_planes as _to_planes
from ..source import Arg
from .spec import OpSpec, Output, Request, grid_1d, load_align


def _context(req: Request) -> dict:
    """One work-item per block; each field is copied with the widest loads its offset in the block
    allows (load_align) and stored as whole words into its plane entry where it has them."""
    fmt = req.fmt
    copies = []
    for p in field_planes(fmt):
        # pieces of the plane entry's alignment (at most 16 bytes; 8 goes as two words)
        piece = next(w for w in (16, 4, 2, 1) if p.nbytes % w == 0 and p.align >= w)
        src = load_align(fmt, p.field, piece)
        copies.append(dict(field=p.field, nbytes=p.nbytes, offset=p.offset, before=p.before, src_align=src,
                           dst_align=p.align, piece=piece, pieces=p.nbytes // piece))  # fmt: skip
    args = [Arg("blocks", "in", "u8", bind="data"), Arg("planes", "out", "u8"), Arg("nblocks", "scalar", "u32")]
    return dict(args=args, copies=copies, planes=field_planes(fmt), wg=req.pop_wg(64, 1))


def _grid(ks, sizes: dict):
    return grid_1d(sizes["nblocks"], ks.wg)


SPEC = OpSpec(
    name="repack_planes", template="repack_planes.jinja", doc="inline blocks -> one plane per field (layout planes)",
    context=_context, grid=_grid, accepts=lambda fmt: fmt.inline, dtypes=("u8",),
    outputs=(Output("planes", "u8", lambda s: s["planes_bytes"]),),
    reference=lambda qt: _to_planes(qt.format, qt.data), notes={"variants": False},
)  # fmt: skip
