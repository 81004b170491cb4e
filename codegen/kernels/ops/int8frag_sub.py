"""gemv_int8frag_sub: gemv_int8mma_sub's product (x through q8_1, int8 warp matrix products a
sub-block, for 16 rows of W and every activation row m < M <= 8) with W read from a "fragments"
layout of the super-block rows, made once on the device (repack_fragments_sub), and x from
quantize_q8_1's fragments layout.

gemv_int8mma_sub loads each lane's fragment words from the blocks as 4-byte words of 8 rows and
decodes its rows' sub-block scales again in every lane of a quad, chunk after chunk: 1.3-2.6x
gemv_int8dot's time at M = 8 (run 98). Here a warp takes a tile of 8 chunks (a K-quant super-block,
8 MXFP4 blocks, 4 NVFP4 blocks) of its 16 rows at a time, and a lane loads all it needs of a row's
tile with a few 16-byte loads: its code words of every chunk, then the tile's scales ("head").

The layout, for N rows of nt tiles of G blocks (the last tile padded with zero blocks), is one
record of T bytes per (row, tile), rows after rows:
- for each code plane p: lane q's words of the tile, for each distinct run of the plane in chunk
  order, words q and q + 4 of the run; n_p words a lane, stored 16 bytes a lane at a time (4 lanes
  x 16 bytes, then the next 16 of each lane), or 8 or 4 where n_p is not a multiple of 4. Table rows
  (4-bit codes looked up in a table) take one word a chunk instead, its byte i holding the codes of
  the chunk's elements 4 q + i (low nibble) and 16 + 4 q + i (high nibble): chunk words q and q + 4
  from one table lookup of one word, whichever way the row pairs its elements in a byte (MXFP4 pairs
  j and j + 16 of a block, as this does, so its words are its bytes; NVFP4 pairs j and j + 8 of each
  16, so its nibbles move);
- the head: every field of the tile's blocks that is not a code plane, block after block, each
  field's bytes in field order, padded to whole words;
T a multiple of 16. SubFragments holds the nibble map: nibble i of a record (byte i // 2, the high
nibble for odd i) is nibble nibbles[i] of the tile's blocks (-1: a pad, zero), and where every byte
of the record is one byte of the blocks, the byte map src; the numpy reference and the repack kernel
both follow it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from ...formats import get, locate
from ...formats.subscales import INTEGER_RANGE
from ..source import Arg
from .int8dot import ACT, X_FRAG_PAD, _sub_block_context, int8dot_reference, reads_x_sum
from .int8mma import FRAG_WORDS
from .int8mma_sub import accepts
from .spec import OpSpec, Output, Request, grid_1d

TILE_CHUNKS = 8  # q8_1 blocks (chunks) of a tile


@dataclass(frozen=True)
class SubFragments:
    """The fragments layout of one super-block row (see the module's docstring)."""

    group: int  # G: blocks a tile
    words: tuple[int, ...]  # n_p: words a lane of each code plane
    word_at: tuple[tuple[tuple[int, int], ...], ...]  # [plane][chunk] -> (lane word of chunk word q, of q + 4)
    plane_at: tuple[int, ...]  # each plane's first byte in a record
    head_at: int  # the head's first byte in a record
    head_bytes: int  # the head's bytes, whole words
    head_field: tuple[tuple[int, str, int], ...]  # (block, field, its first byte in the head)
    record: int  # T
    nibbles: tuple[int, ...]  # nibble i of a record: nibble nibbles[i] of the tile's blocks, -1 a pad

    @property
    def src(self) -> tuple[int, ...] | None:
        """The byte map (byte i of a record: byte src[i] of the tile's blocks, -1 a pad byte), where
        the nibble map moves whole bytes; else None."""
        lo, hi = self.nibbles[0::2], self.nibbles[1::2]
        if any((a, b) != (-1, -1) and (a % 2 or b != a + 1) for a, b in zip(lo, hi)):
            return None
        return tuple(a // 2 if a >= 0 else -1 for a in lo)

    def width(self, p: int) -> int:
        """The bytes a lane stores (and loads) at a time of plane p: 16, 8 or 4."""
        n = self.words[p]
        return 16 if n % 4 == 0 else 8 if n % 2 == 0 else 4

    def lane_word(self, p: int, q: int, w: int) -> int:
        """The byte in a record of lane q's word w of plane p."""
        per = self.width(p) // 4
        return self.plane_at[p] + (w // per) * 4 * self.width(p) + q * self.width(p) + 4 * (w % per)


def _nibble(fmt, block: int, e: int, p: int) -> int:
    """The index of element e of block `block`'s code nibble in plane p (a 4-bit plane), counted in the
    tile's blocks."""
    byte, shift = locate(fmt, e, p)
    return 2 * (block * fmt.block_bytes + fmt.offsets[fmt.planes[p].field] + int(byte)) + int(shift) // 4


def _bytes(start: int) -> tuple[int, ...]:
    """The nibbles of the 4 bytes from byte `start` of the tile's blocks, in order."""
    return tuple(range(2 * start, 2 * start + 8))


@cache
def sub_fragments(name: str) -> SubFragments:
    fmt = get(name)
    act = get(ACT)
    g = max(1, TILE_CHUNKS * act.block // fmt.block)
    per_block = fmt.block // act.block
    lut = _sub_block_context(fmt, act, act.block, False, False)["lut"]
    nib: list[int] = []
    words, word_at, plane_at = [], [], []
    for p, plane in enumerate(fmt.planes):
        lanes: list[list[tuple[int, ...]]] = [[] for _ in range(4)]  # per lane: the source nibbles of each word
        at = []
        for c in range(g * per_block):
            b, eb = divmod(c, per_block)
            e0 = eb * act.block
            if lut:  # one word: elements 4 q + i in the low nibbles, 16 + 4 q + i in the high ones
                assert plane.bits == 4, "table rows: 4-bit codes"
                for q in range(4):
                    lanes[q].append(tuple(_nibble(fmt, b, e0 + 16 * h + 4 * q + i, p) for i in range(4) for h in (0, 1)))
                at.append((c, c))
                continue
            # words q and q + 4 of the chunk's run (its first byte: locate of its first element)
            run = b * fmt.block_bytes + fmt.offsets[plane.field] + int(locate(fmt, e0, p)[0])
            starts = [[_bytes(run + 4 * q), _bytes(run + 16 + 4 * q)] for q in range(4)]
            pair = []
            for k in (0, 1):
                if starts[0][k] in lanes[0]:  # a run an earlier chunk loaded
                    pair.append(lanes[0].index(starts[0][k]))
                    assert all(lanes[q].index(starts[q][k]) == pair[-1] for q in range(4))
                else:
                    pair.append(len(lanes[0]))
                    for q in range(4):
                        lanes[q].append(starts[q][k])
            at.append(tuple(pair))
        words.append(len(lanes[0]))
        word_at.append(tuple(at))
        plane_at.append(len(nib) // 2)
        layout = SubFragments(g, tuple(words), (), tuple(plane_at), 0, 0, (), 0, ())
        first = len(nib)
        nib.extend([-1] * 32 * len(lanes[0]))
        for q in range(4):
            for w, src in enumerate(lanes[q]):
                o = 2 * (layout.lane_word(p, q, w) - plane_at[p]) + first
                nib[o : o + 8] = src
    codes = {p.field for p in fmt.planes}
    head_at, head_field = len(nib) // 2, []
    for b in range(g):
        for f in fmt.fields:
            if f.name not in codes:
                head_field.append((b, f.name, len(nib) // 2 - head_at))
                at = b * fmt.block_bytes + fmt.offsets[f.name]
                nib.extend(range(2 * at, 2 * (at + f.nbytes)))
    head_bytes = -(-(len(nib) // 2 - head_at) // 4) * 4
    nib.extend([-1] * (2 * (head_at + head_bytes) - len(nib)))
    record = -(-len(nib) // 32) * 16
    nib.extend([-1] * (2 * record - len(nib)))
    return SubFragments(g, tuple(words), tuple(word_at), tuple(plane_at), head_at, head_bytes, tuple(head_field),
                        record, tuple(nib))  # fmt: skip


def fold_max(fmt) -> int:
    """The largest code times stored sub-block scale where gemv_int8frag_sub multiplies a row's
    integer sub-block scales into its codes inside the int8 operands (and takes the mins as a second
    W), 0 where it cannot: unsigned codes without a zero point, unsigned scales and mins, every
    product a signed byte (q2_k: 3 x 15 = 45). The kernel then scales by d (and dmin) once a block."""
    rng = INTEGER_RANGE.get(fmt.sub_scales)
    if not rng or rng[0] < 0 or fmt.code != "unsigned" or fmt.zero:
        return 0
    top = ((1 << fmt.bits) - 1) * rng[1]
    return top if top <= 127 else 0


def frag_sub_bytes(fmt, n: int, k: int) -> int:
    """Bytes of the fragments layout of an n x k weight of super-block row fmt."""
    lay = sub_fragments(fmt.name)
    return n * -(-(k // fmt.block) // lay.group) * lay.record


def to_sub_fragments(fmt, data: np.ndarray, n: int, k: int) -> np.ndarray:
    """The fragments layout (uint8) of the n x k weight whose blocks are `data` (row fmt)."""
    lay = sub_fragments(fmt.name)
    nb = k // fmt.block
    nt = -(-nb // lay.group)
    blocks = np.zeros((n, nt * lay.group * fmt.block_bytes + 1), np.uint8)  # a last zero byte: the pads' source
    blocks[:, : nb * fmt.block_bytes] = np.ascontiguousarray(data, np.uint8).reshape(n, -1)
    nibbles = np.stack([blocks & 15, blocks >> 4], axis=-1).reshape(n, -1)
    tile = 2 * lay.group * fmt.block_bytes
    src = np.array(lay.nibbles)
    idx = np.where(src < 0, nt * tile, np.arange(nt)[:, None] * tile + src[None, :])  # [tile, record nibble]
    out = nibbles[:, idx].reshape(n, -1, 2)
    return (out[..., 0] | (out[..., 1] << 4)).reshape(-1)


def _gemv_context(req: Request) -> dict:
    fmt, act, t = req.fmt, get(ACT), req.target
    lay = sub_fragments(fmt.name)
    ctx = _sub_block_context(fmt, act, act.block, False, False)
    # the warps of a work-group take tiles w, w + warps, ... of the 16 rows and add up their sums in
    # local memory
    wg = req.pop_wg(256, 32)
    warps = wg // 32
    # the next turn's tile loaded before this turn's products (registers for two tiles of W)
    prefetch = req.pop_bool("prefetch", False)
    args = [Arg("frags", "in", "u8", bind="fragments"), Arg("xq", "in", "u8"), Arg("y", "out", req.dtype),
            Arg("N", "scalar", "u32"), Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32"),
            Arg("sums", "local", "f32", count=warps * 128)]  # fmt: skip
    if not t.mma:
        args.append(Arg("frag", "local", "u32", count=wg * FRAG_WORDS))
    heads = {(b, f): at for b, f, at in lay.head_field}
    # each chunk's slot shift in each plane (split runs: sub-blocks sharing a run's bytes)
    per_block = fmt.block // act.block
    shifts = [[int(locate(fmt, (c % per_block) * act.block, p)[1]) for c in range(TILE_CHUNKS)]
              for p in range(len(fmt.planes))]  # fmt: skip
    assert not (ctx["spc"] > 1 and reads_x_sum(fmt, act)), "a min over the q8_1 block: one sub-block a chunk"
    fold = fold_max(fmt)
    # by_block (integer sub-block scales): the scales multiply each chunk's integer sums in integers and
    # d (dmin) scale a block's sums once, where d * sc_j as floats multiplied every term (run 198, the
    # session-38 doc: 4-13% faster at M = 8); a chunk's sums times its scales stay within an int
    by_block = fmt.sub_scales in INTEGER_RANGE
    assert by_block or not fmt.has_min, "float sub-block scales come without mins"
    if by_block:
        assert (1 << fmt.bits) * max(map(abs, INTEGER_RANGE[fmt.sub_scales])) * act.block * 128 < 1 << 31
    assert not fold or all(fmt.member(f).ctype == "f16" for f in ("d", "dmin") if fmt.has_field(f)), "f16 d, dmin"
    return dict(
        ctx, args=args, wg=wg, warps=warps, prefetch=prefetch, fold=bool(fold), fold_max=fold,
        by_block=by_block, act=act, lay=lay, heads=heads, shifts=shifts,
        chunks=TILE_CHUNKS, zero_bytes="0x%08xu" % (fmt.zero * 0x01010101) if fmt.zero else "",
        frag_words=FRAG_WORDS, x_pad=X_FRAG_PAD, use_sx=reads_x_sum(fmt, act),
    )  # fmt: skip


def _gemv_grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return (-(-sizes["N"] // 16) * ks.wg,), (ks.wg,)


GEMV_INT8FRAG_SUB = OpSpec(
    name="gemv_int8frag_sub", template="gemv_int8frag_sub.jinja",
    doc="y = x @ W.T for super-block rows through q8_1 activations, int8 warp matrix products, W in fragments",
    context=_gemv_context, grid=_gemv_grid, accepts=accepts, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    grid_role="reads_prior",
    reference=int8dot_reference, notes={"variants": False},
)  # fmt: skip


def _repack_context(req: Request) -> dict:
    """One work-item per word of the layout: its four bytes from the byte map (a constant table)."""
    lay = sub_fragments(req.fmt.name)
    args = [Arg("blocks", "in", "u8", bind="data"), Arg("frags", "out", "u8"), Arg("N", "scalar", "u32"),
            Arg("K", "scalar", "u32")]  # fmt: skip
    return dict(args=args, wg=req.pop_wg(256, 1), lay=lay, src=lay.src)


def _repack_grid(ks, sizes: dict):
    fmt = get(ks.format)
    return grid_1d(frag_sub_bytes(fmt, sizes["N"], sizes["K"]) // 4, ks.wg)


REPACK_FRAGMENTS_SUB = OpSpec(
    name="repack_fragments_sub", template="repack_fragments_sub.jinja",
    doc="super-block rows -> the fragments layout gemv_int8frag_sub reads (ops/int8frag_sub.py)",
    context=_repack_context, grid=_repack_grid, accepts=accepts, dtypes=("u8",),
    outputs=(Output("frags", "u8", lambda s: s["frags_bytes"]),),
    reference=lambda qt: to_sub_fragments(qt.format, qt.data, qt.shape[0], qt.shape[1]), notes={"variants": False},
)  # fmt: skip
