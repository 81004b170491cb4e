"""The integer-dot GEMV path (llama.cpp's mmvq idea, written for qkgen): activations are quantized
to q8_1 on the device (quantize_q8_1, bit-identical to the reference codec), then each weight
block meets the activation block of the same K range in 4-way int8 dot products (gemv_int8dot).
Weight rows qualify by their facts: inline blocks of the activation's block size whose codes fit
a signed byte and whose 4-byte code groups cover four consecutive elements; or super-blocks of
whole activation blocks (K-quants, MXFP4, NVFP4) with a scale per sub-block of whole code words,
each code plane split-packed in runs of whole activation blocks (the 32 codes one q8_1 block meets
are one run of 32 bytes per plane, one byte per element, at one slot) or in units of one sub-block
(its slots one after another). Table codes qualify when every table value is an integer that fits
a signed byte (E2M1 doubled): the kernel looks the codes up eight at a time.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import QKGenValueError
from ...formats import get, locate
from ...formats import reference as ref
from ...formats.layout import LAYOUTS, field_planes, plane_load_align
from ...formats.subscales import block_scales
from ..cexpr import Sym, bare
from ..source import Arg
from .dequantize import decodes
from .spec import LOCAL_BYTES, MAX_M, OpSpec, Output, Request, default_word_loads, lanes_of, load_align, part_index

ACT = "q8_1"  # the activation format: f16 d and s = d * sum(q), 32 signed 8-bit codes


def is_q8_1_row(fmt) -> bool:
    """Rows quantize_q8_1 can write: signed 8-bit inline codes with the f16 sum field s."""
    return fmt.inline and fmt.code == "signed" and fmt.bits == fmt.low_bits == 8 and fmt.has_field("s")


def is_int8dot_weight(fmt) -> bool:
    return is_block_weight(fmt) or is_sub_block_weight(fmt)


def is_block_weight(fmt) -> bool:
    """Rows of one scale per block of the activation's size (q4_0 .. q8_0)."""
    act = get(ACT)
    fits = (fmt.code == "signed" and fmt.bits == 8) or (fmt.code == "unsigned" and fmt.bits <= 7 and fmt.step == 1)
    words = (fmt.pack == "split" and fmt.run % 4 == 0) or fmt.per_byte == 1
    return fmt.inline and not fmt.has_field("s") and fmt.block == act.block and fits and words


def is_sub_block_weight(fmt) -> bool:
    """Super-block rows (K-quants, MXFP4, NVFP4): a scale per sub-block (and a min) that the decode
    reads (dequantize's `decodes`), sub-blocks of whole code words tiling the activation block,
    and either unsigned codes of at most 7 bits (the raw code is a signed byte) with every code
    plane split-packed in runs of whole activation blocks (a q8_1 block's codes: one run of bytes
    per plane, one slot), or table codes of signed bytes in one plane of sub-block units
    (table_pairs)."""
    act = get(ACT)
    if not (fmt.inline and decodes(fmt) and fmt.sub_scales and fmt.block % act.block == 0):
        return False
    tiles = act.block % fmt.sub_block == 0 and fmt.sub_block % 4 == 0
    runs = all(p.pack == "split" and p.run % act.block == 0 for p in fmt.planes)
    codes = fmt.code == "unsigned" and fmt.step == 1 and fmt.bits <= 7
    return tiles and ((runs and codes) or table_pairs(fmt)) and not fmt.has_field("s")


def table_pairs(fmt) -> bool:
    """Table codes the kernel looks up eight at a time (qk_lut16x8): signed-byte values
    (byte_table), one 4-bit plane whose unit is a sub-block of two runs, so each loaded word holds
    the codes of chunk words k (low nibbles) and k + run / 4 (high nibbles)."""
    (p, *more) = fmt.planes
    return (byte_table(fmt) is not None and not more and p.pack == "split" and p.bits == 4
            and p.unit == fmt.sub_block == 2 * p.run and p.run % 4 == 0)  # fmt: skip


def byte_table(fmt) -> tuple[int, ...] | None:
    """A 16-entry table code's values as signed bytes, when every one is an integer in -128..127
    (MXFP4's E2M1 doubled), else None."""
    if fmt.code != "table" or len(fmt.table) != 16 or any(v != int(v) or not -128 <= v <= 127 for v in fmt.table):
        return None
    return tuple(int(v) for v in fmt.table)


# ---- quantize_q8_1 ----

# quantize_q8_1's layout "fragments", what gemv_int8frag reads: each row of q8_1 blocks padded with
# zero blocks to a multiple of X_FRAG_PAD (so a group of up to 4 blocks never straddles rows), then
# two planes. codes: block b's 32 code bytes at 32 b, their words in the order X_FRAG_WORDS, so lane q
# of an mma quad gets its b fragment (words q and q + 4) with one 8-byte load and a warp's 8 rows
# fill 8 whole sectors; ds: block b's d and s (the block's first word) at 32 B + 4 b, B the blocks.
X_FRAG_PAD = 4
X_FRAG_WORDS = (0, 4, 1, 5, 2, 6, 3, 7)
assert all(X_FRAG_WORDS[2 * (w % 4) + w // 4] == w for w in range(8)), "the lane-group kernel's byte places"


X_LAYOUTS = (*LAYOUTS, "fragments")  # the layouts quantize_q8_1 writes


def x_frag_row_blocks(k: int) -> int:
    """Blocks a row of the fragments layout of x [M, k]: k / 32, padded to a multiple of X_FRAG_PAD."""
    return -(-k // get(ACT).block // X_FRAG_PAD) * X_FRAG_PAD


def q8_1_sizes(m: int, k: int, layout: str) -> dict[str, int]:
    """quantize_q8_1's launch sizes for x [m, k] in `layout`: its blocks (nblocks, the pad blocks of
    the fragments layout counted, as its output holds them) and, for fragments, row_blocks (k / 32)."""
    if layout != "fragments":
        return {"nblocks": m * k // get(ACT).block}
    return {"nblocks": m * x_frag_row_blocks(k), "row_blocks": k // get(ACT).block}


def to_x_fragments(xq: np.ndarray, m: int, k: int) -> np.ndarray:
    """The fragments layout (uint8) of x [m, k]'s q8_1 blocks `xq` (the reference codec's bytes)."""
    act = get(ACT)
    assert act.offsets["d"] == 0 and act.offsets["s"] == 2 and act.offsets["qs"] == 4, "ds is the first word"
    nb, nbx = k // act.block, x_frag_row_blocks(k)
    blocks = np.zeros((m, nbx, act.block_bytes), np.uint8)
    blocks[:, :nb] = np.ascontiguousarray(xq, np.uint8).reshape(m, nb, act.block_bytes)
    codes = blocks[:, :, 4:].reshape(m, nbx, 8, 4)[:, :, list(X_FRAG_WORDS)]
    return np.concatenate([codes.reshape(-1), blocks[:, :, :4].reshape(-1)])



def _quantize_context(req: Request) -> dict:
    """One work-item per block of `fmt.block` activations: x [M, K] (K a multiple of the block) is
    row-major, so block b is elements [b*block, (b+1)*block) and q8_1 block b of the output."""
    fmt = req.fmt
    qs_bytes = fmt.code_bytes(fmt.block)
    x_size = 4 if req.dtype == "f32" else 2
    # layout "planes": xq holds the row's planes (formats.layout), the codes 16-byte aligned;
    # "fragments": gemv_int8frag's (X_FRAG_WORDS above), nblocks counting the pad blocks
    layout = req.pop_choice("layout", "blocks", X_LAYOUTS)
    planes = field_planes(fmt) if layout == "planes" else ()
    qs_align = plane_load_align(fmt, "qs", 0, qs_bytes) if planes else load_align(fmt, "qs", qs_bytes)
    args = [Arg("x", "in", "x"), Arg("xq", "out", "u8"), Arg("nblocks", "scalar", "u32")]
    if layout == "fragments":
        args.append(Arg("row_blocks", "scalar", "u32"))  # K / 32: x's blocks a row, unpadded
    ctx = dict(args=args, x_bytes=fmt.block * x_size, qs_bytes=qs_bytes, qs_align=qs_align, layout=layout,
               planes=planes, pad=X_FRAG_PAD, word_order=X_FRAG_WORDS)  # fmt: skip
    # lane_group: a block per lane group (a sub-group, else a local-memory tree), each lane its
    # elements, the maximum and the code sum by lane reductions: a shorter chain per block than one
    # work-item walking its 32 elements (M = 1 is latency: 448 blocks at K = 14336). Off by default.
    if req.pop_bool("lane_group", False):
        lanes = lanes_of(req.target)
        if lanes > fmt.block or fmt.block % lanes:
            raise QKGenValueError(f"lane_group: True needs lane groups that divide the {fmt.block}-element block; "
                                  f"this target's are {lanes} lanes wide; allowed: False")  # fmt: skip
        wg = req.pop_wg(max(128, lanes), lanes)  # 4 blocks a work-group of 32 lanes
        if not req.target.subgroups:
            args.append(Arg("scratch", "local", "f32", count=wg))
        return dict(ctx, lane_group=True, lanes=lanes, ept=fmt.block // lanes, wg=wg)
    return dict(ctx, lane_group=False, wg=req.pop_wg(64, 1))


def _quantize_grid(ks, sizes: dict):
    """Work-items: one per block, or (lane_group) `lanes` per block, rounded up to whole work-groups."""
    per_block = ks.param("lanes") if ks.param("lane_group") else 1
    return (-(-sizes["nblocks"] * per_block // ks.wg) * ks.wg,), (ks.wg,)



QUANTIZE_Q8_1 = OpSpec(
    name="quantize_q8_1", template="quantize_q8_1.jinja", doc="activations -> q8_1 blocks (the int8dot input)",
    context=_quantize_context, grid=_quantize_grid, accepts=is_q8_1_row, grid_role="feeds_next",
    outputs=(Output("xq", "u8", lambda s: s["nblocks"] * get(ACT).block_bytes),),
    reference=lambda x: ref.quantize(x, ACT).data, notes={"variants": False},
)  # fmt: skip


# ---- gemv_int8dot ----


def act_words(fmt, act) -> list[tuple[int, int]]:
    """(weight code word, shift) holding the codes of elements 4k..4k+3, for every activation word
    k: where locate() puts element 4k (split packing: q4's elements j and j+16 share a byte)."""
    out = []
    for k in range(act.code_bytes(act.block) // 4):
        byte, shift = locate(fmt, 4 * k)
        out.append((int(byte) // 4, int(shift)))
    return out


def _gemv_context(req: Request) -> dict:
    fmt, t = req.fmt, req.target
    act = get(ACT)
    mmax = req.pop_int("mmax", 1, 1, MAX_M)
    lanes = lanes_of(t)
    # Rows per team (each q8_1 block loaded serves them all) and lane groups per team (slices), as
    # the float GEMV takes them. H100 sweep (docs/bench/2026-11-23-h100-gemv-sweep.md), 4096 x 14336,
    # kernel alone: q4_0 M=1 18.3 -> 14.4 us cold (2 rows, 4 slices), M=8 67.7 -> 34.0 us (4 rows, 4 slices).
    # Super-block rows (sweep 6, docs/bench/2026-11-24-h100-kquant-vs-llamacpp.md, cold): 16-element
    # sub-blocks (q6_k) at M = 1 one row per team (29.3 -> 27.2 us); 32-element ones (q4_k) at M > 1
    # 2 slices and 2 teams per work-group (41.2 -> 37.2 us; q6_k that way: 58.6 -> 80.7, so not it).
    # Chunks of a whole q8_1 block for 16-element sub-blocks (ept 32; H200 sweep 13,
    # docs/bench/2026-11-26-h200-int8dot-rows.md, kernel alone, cold, M = 1 with 2 rows a team): q2_k
    # 16.8 -> 11.7 us, q3_k 22.1 -> 18.5, q6_k 21.0 -> 20.9, nvfp4 17.3 -> 17.2; M = 8: 37.8 -> 34.1,
    # 50.7 -> 44.7, 52.1 -> 52.0, 54.7 -> 41.4; at M = 8 2 rows a team rather than 4 (sweeps 15-16, f32
    # x): q6_k 51.5 -> 43.8, nvfp4 41.8 -> 37.2, q3_k 45.4 -> 41.1, but q2_k, whose mins add a term a
    # sub-block, 34.1 -> 38.0: 4 rows for rows with mins.
    sub = fmt.sub_block if fmt.sub_scales else 0
    ept = req.pop_int("ept", act.block, sub, act.block) if sub else 0
    halves = sub and sub < act.block and ept == act.block and not fmt.has_min  # two sub-blocks a chunk
    # One row a team at M = 1 for 8-bit block rows (q8_0: 32 code bytes a block; sweep 17, H200, f32 x,
    # kernel alone: 19.1 -> 17.9 us cold; q4_0 and q4_1 slower so: 11.2 -> 13.3, 11.4 -> 11.9).
    wide = not sub and fmt.bits == 8
    # 2 rows a team at M > 1 for 32-element sub-blocks of two code planes (q5_k): with 4 its kernel
    # spilled (98 registers, 128 bytes of local memory). H200 sweep 43 (run 96, kernel alone, cold, M =
    # 8): 49.3 -> 38.3 us with f16 x, 42.6 -> 38.2 with f32; q2_k, q4_k, mxfp4 slower so (34.0 -> 37.7,
    # 31.6 -> 36.3, 29.9 -> 38.3), nvfp4 equal.
    two_planes = sub == act.block and len(fmt.planes) > 1
    two_rows = halves or (mmax > 1 and two_planes)
    rpw = req.pop_int("rpw", 2 if two_rows else 4 if mmax > 1 else 1 if ept == 16 or wide else 2, 1, 8)
    # 2 slices at M = 1 too for 32-element sub-blocks of two code planes (q5_k; sweeps 18-19, H200,
    # kernel alone: 16.2 -> 15.2 us with f32 x, 16.0 -> 15.1 with f16; one plane, q4_k: 12.1 -> 12.7, and
    # mxfp4: 15.3 -> 15.5, keep 4)
    two_teams = mmax > 1 and sub == act.block
    slices = req.pop_int("slices", 2 if two_teams or two_planes else 4, 1, 16)
    wg = req.pop_wg(256 if two_teams else 128, lanes * slices)
    code_bytes = fmt.code_bytes(fmt.block)
    # layout "planes": W and xq in their rows' planes (formats.layout), W's made once by repack_planes
    layout = req.pop_choice("layout", "blocks", LAYOUTS)
    planar = layout == "planes"
    # x_planes: xq's q8_1 blocks in planes while W stays in blocks: a lane's block is then two 16-byte
    # loads and a word or two where the blocks layout took ten word loads, each its own L1 sector
    # (run 74, H100, q4_k at M = 1: 12.2 M sectors for 33 MB of W, three quarters of them x's)
    x_planes = req.pop_bool("x_planes", planar)
    if planar and not x_planes:
        raise QKGenValueError("x_planes: False; layout 'planes' reads x in planes too; allowed: True")
    weight = Arg("planes", "in", "u8") if planar else Arg("blocks", "in", "u8", bind="data")
    args = [weight, Arg("xq", "in", "u8"), Arg("y", "out", req.dtype),
            Arg("N", "scalar", "u32"), Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32")]  # fmt: skip
    if not t.subgroups:
        args.append(Arg("scratch", "local", "f32", count=wg))
    if slices > 1:
        args.append(Arg("partial", "local", "f32", count=wg // lanes * rpw * mmax))
    # stage_x: the work-group's teams take the same q8_1 blocks in a step; it copies them to local
    # memory once for all of them (off by default until timed)
    stage_x = req.pop_bool("stage_x", False)
    if stage_x and x_planes and fmt.sub_scales:
        raise QKGenValueError(f"stage_x: True stages q8_1 blocks, not planes, for super-block rows ({fmt.name}); "
                              "allowed: False with x_planes")  # fmt: skip
    word_loads = req.pop_bool("word_loads", default_word_loads(t))  # 2-byte aligned codes as shifted words
    teams = dict(args=args, lanes=lanes, rows=wg // (lanes * slices) * rpw, groups=wg // (lanes * slices),
                 team=lanes * slices, rpw=rpw, slices=slices, part_at=part_index(rpw, mmax), mmax=mmax, act=act,
                 wg=wg, layout=layout, x_planes=x_planes, stage_x=stage_x, word_loads=word_loads)  # fmt: skip
    if x_planes:  # the activation planes the terms read, and each field of the current q8_1 block (xat)
        xfields = ("qs", "d", "s") if reads_x_sum(fmt, act) else ("qs", "d")
        teams.update(xplanes=[p for p in field_planes(act) if p.field in xfields], xfield_at=_entries(act, "x", "xb"))
    if planar:  # W's planes, and each field of the current block (wat)
        teams.update(wplanes=field_planes(fmt), wfield_at=_entries(fmt, "w", "blk"))
    if stage_x:
        stage = _stage_context(act, lanes * slices // (act.block // ept if sub else 1))
        args.append(Arg("xstage", "local", "u32", count=mmax * stage["sblocks"] * stage["stride"]))
        _check_local_bytes(args, mmax, slices, wg)
        teams.update(stage)
    if fmt.sub_scales:
        # ept: a lane's chunk, one sub-block or (sub-blocks smaller than a q8_1 block) a whole q8_1
        # block of them, its codes one longer run a plane
        if ept not in (fmt.sub_block, act.block):
            raise QKGenValueError(f"ept: {ept}; allowed: {fmt.sub_block} (a sub-block) or {act.block} (a q8_1 block)")
        return {**teams, **_sub_block_context(fmt, act, ept, x_planes, planar)}
    hb = fmt.high_bit_field
    if x_planes and stage_x:  # the staged words that hold f16 fields, put together from their planes
        halves: dict[int, list] = {}
        for p in teams["xplanes"]:
            if p.field != "qs":
                halves.setdefault(teams["xs_half"][p.field][0], []).append(p.field)
        teams["stage_halves"] = sorted(halves.items())
    walign = _plane_align if planar else load_align
    xalign = _plane_align if x_planes else load_align
    return dict(
        teams, act_words=act_words(fmt, act), code_bytes=code_bytes, code_align=walign(fmt, "qs", code_bytes),
        act_align=xalign(act, "qs", act.code_bytes(act.block)), qh_align=walign(fmt, hb, 4) if hb else 0,
        byte_mask=int.from_bytes(bytes([fmt.mask]) * 4, "little"),
    )  # fmt: skip


def reads_x_sum(fmt, act) -> bool:
    """Whether the kernel's terms read the q8_1 block's sum field s: a block row's min or zero point
    folded into it, a super-block row's mins over whole q8_1 blocks."""
    if fmt.sub_scales:
        return fmt.has_min and fmt.sub_block == act.block
    return fmt.scale == "d_m" or bool(fmt.zero)


def _entries(fmt, prefix: str, index: str) -> dict[str, str]:
    """Each field of row fmt's block `index` where its fields are in planes (formats.layout): entry
    `index` of the plane the kernel points <prefix>_<field> at, as C."""
    return {f.name: f"{prefix}_{f.name} + {index}" + (f" * {f.nbytes}u" if f.nbytes > 1 else "") for f in fmt.fields}


def _plane_align(fmt, field: str, nbytes: int) -> int:
    """load_align's counterpart for an entry of a plane (formats.layout): loads from its first byte."""
    return plane_load_align(fmt, field, 0, nbytes)


def _stage_context(act, sblocks: int) -> dict:
    """stage_x: each step's q8_1 blocks (sblocks per activation row, every m) in local memory as
    whole q8_1 blocks of words (the blocks layout's bytes; from planes, put back together), a block
    every `stride` words, with no padding: q8_1's 36 bytes are 9 words, an odd count, so 32 lanes
    reading word k of 32 consecutive blocks hit 32 different banks. The words of a block that hold
    its f16 fields: (word, shift) of d and s."""
    stride = act.block_bytes // 4
    assert act.block_bytes % 4 == 0 and stride % 2 and act.offsets["qs"] % 4 == 0, act.name
    half = {f: (act.offsets[f] // 4, act.offsets[f] % 4 * 8) for f in ("d", "s")}
    return dict(sblocks=sblocks, stride=stride, xs_qs=act.offsets["qs"] // 4, xs_half=half)


def _check_local_bytes(args: list, mmax: int, slices: int, wg: int) -> None:
    """Refuse a stage_x kernel whose local arrays pass LOCAL_BYTES, naming what to lower: the staged
    blocks grow with mmax and slices (the team's width), the sums with wg."""
    need = sum(a.nbytes() for a in args if a.kind == "local")
    if need > LOCAL_BYTES:
        raise QKGenValueError(f"slices: {slices}; with stage_x at mmax {mmax}, slices {slices}, wg {wg} the kernel "
                              f"needs {need} bytes of local memory; allowed: at most {LOCAL_BYTES} (fewer slices or "
                              f"a smaller mmax)")  # fmt: skip


def _plane_chunk(fmt, ept: int, plane: int, planar: bool) -> dict:
    """Where the codes of a chunk of `ept` elements starting at super-block element eb sit in a code
    plane: its first byte and slot (C, from locate()), the load alignment of its run of ept bytes,
    the slot's bit shift (C; empty at slot 0) and the byte mask. A plane of runs shorter than the
    chunk (table_pairs: the chunk is one whole unit): its run of bytes, loaded once."""
    p = fmt.planes[plane]
    aligned = _plane_align if planar else load_align
    if p.run < ept:
        # the chunk's units' runs, one after another: eb is a multiple of the unit (0, and no eb in
        # the template, where the chunk is the whole super-block)
        byte = "0u" if ept == fmt.block else f"(eb / {p.unit}u) * {p.run}u"
        load = ept // p.unit * p.run
        return dict(field=p.field, bits=p.bits, to=p.shift, unit=p.unit, run=p.run, slot="0u", shift="",
                    byte="" if byte == "0u" else byte, load=load, align=aligned(fmt, p.field, load))
    e = Sym.var("eb", fmt.block)
    slot = bare(((e % p.unit) // p.run).c())
    byte = bare(locate(fmt, e, plane)[0].c())
    name = "slot" if plane == 0 else "hslot"
    shift = "" if slot == "0u" else f" >> {name}" if p.bits == 1 else f" >> ({name} * {p.bits}u)"
    return dict(field=p.field, bits=p.bits, to=p.shift, unit=p.unit, run=p.run, slot=slot,
                byte="" if byte == "0u" else byte, shift=shift, align=aligned(fmt, p.field, ept), load=ept,
                mask=int.from_bytes(bytes([p.mask]) * 4, "little"))  # fmt: skip


def _sub_block_context(fmt, act, ept: int, x_planes: bool, planar: bool) -> dict:
    """The template values of a super-block row: a lane's chunk is ept elements (spc sub-blocks, part
    cpb of a q8_1 block, per_block chunks per super-block); each plane's chunk; which activation
    sums the terms need: the q8_1 block's s for mins over a whole q8_1 block, the chunk's own code
    sum (isum) for mins of smaller sub-blocks and for the zero point (folded in integers:
    sum((q - zero) * q_x) = sumi - zero * isum)."""
    spc = ept // fmt.sub_block  # sub-blocks a chunk
    table = byte_table(fmt)
    # the table as four words, value i in byte i % 4 of word i / 4 (qk_lut16x8's operands)
    lut = None if table is None else ["0x%08xu" % int.from_bytes(bytes(v & 0xFF for v in table[i : i + 4]), "little")
                                      for i in range(0, 16, 4)]  # fmt: skip
    lut_words = []  # each loaded word of the code plane: (word, chunk word of its low nibbles, of its high ones)
    if lut:
        per = fmt.planes[0].run // 4  # words a run; the chunk's units one after another
        lut_words = [(u * per + i, 2 * u * per + i, 2 * u * per + i + per) for u in range(spc) for i in range(per)]
    return dict(ept=ept, words=ept // 4, cpb=act.block // ept, per_block=fmt.block // ept, lut=lut,
                lut_words=lut_words, spc=spc, sub=fmt.sub_block, sub_words=fmt.sub_block // 4,
                planes=[_plane_chunk(fmt, ept, i, planar) for i in range(len(fmt.planes))],
                use_sx=reads_x_sum(fmt, act),
                use_isum=bool(fmt.zero) or (fmt.has_min and fmt.sub_block < act.block),
                act_align=(_plane_align if x_planes else load_align)(act, "qs", ept))  # fmt: skip


def k_multiple(fmt) -> int:
    """What K must be a multiple of on the int8dot path: whole q8_1 blocks and whole weight blocks."""
    return math.lcm(get(ACT).block, fmt.block)


def _gemv_grid(ks, sizes: dict):
    rows = ks.wg // (ks.param("lanes") * ks.param("slices")) * ks.param("rpw")
    return (-(-sizes["N"] // rows) * ks.wg,), (ks.wg,)


def int8dot_terms(qt, x: np.ndarray) -> np.ndarray:
    """The per-block terms the kernel adds, in float64, from the reference's q8_1 bytes of x (its
    f16 d and s as stored): dw * (dx * sum(qw * qx)) + mw * sx (d_m rows) or - zero * dw * sx
    (zero-point rows), qw the raw stored code. Shape [M, N, blocks]; the mw * sx or - zero * dw * sx
    parts as a second set of entries after them ([M, N, 2 blocks]), so that a bound over |terms|
    covers the two parts cancelling. Super-block rows: the terms of _sub_block_terms, per sub-block."""
    act, fmt = get(ACT), qt.format
    x = np.asarray(x, dtype=np.float32).reshape(-1, qt.shape[1])
    xqt = ref.quantize(x, ACT)

    def field(q, name: str) -> np.ndarray:  # an f16 field of every block, [rows, blocks], as float64
        at = q.format.offsets[name]
        blocks = np.asarray(q.data).reshape(q.shape[0], -1, q.format.block_bytes)
        return np.ascontiguousarray(blocks[..., at : at + 2]).view("<f2")[..., 0].astype(np.float64)

    dx, sx = field(xqt, "d"), field(xqt, "s")
    qx = ref.unpack_codes(xqt).reshape(x.shape[0], -1, act.block).astype(np.int64)
    if fmt.sub_scales:
        return _sub_block_terms(qt, dx, sx, qx)
    dw = field(qt, "d")
    qw = ref.unpack_codes(qt).reshape(qt.shape[0], -1, fmt.block).astype(np.int64)
    terms = dw[None] * (dx[:, None] * np.einsum("mbi,nbi->mnb", qx, qw))
    if fmt.scale == "d_m":
        return np.concatenate([terms, field(qt, "m")[None] * sx[:, None]], axis=-1)
    if fmt.zero:
        return np.concatenate([terms, -fmt.zero * dw[None] * sx[:, None]], axis=-1)
    return terms


def _sub_block_terms(qt, dx: np.ndarray, sx: np.ndarray, qx: np.ndarray) -> np.ndarray:
    """Super-block rows, per sub-block j of each row (s_j = f32(d * sc_j), mn_j = f32(dmin * m_j) as
    the decode rounds them; the FP4 rows' s_j their decoded float scale), dx, sx and qx of the q8_1
    block holding the sub-block, q_w the raw code (the FP4 rows: its table value):

        s_j * (dx * sum((q_w - zero) * q_x))        (the zero point folded in integers)
        - mn_j * sx                                 (mins, sub-blocks of a whole q8_1 block)
        - mn_j * (dx * sum q_x)                     (mins, smaller sub-blocks: their own code sums)

    Shape [M, N, sub-blocks], the min terms (rows with mins) as a second set of entries after them."""
    act, fmt = get(ACT), qt.format
    n, sub = qt.shape[0], fmt.sub_block
    per = act.block // sub  # sub-blocks per q8_1 block
    s, mn = block_scales(fmt, np.asarray(qt.data).reshape(-1, fmt.block_bytes))
    qw = ref.unpack_codes(qt).reshape(n, -1, sub).astype(np.int64) - fmt.zero
    table = byte_table(fmt)
    if table is not None:  # the code's table value, as the kernel looks it up
        qw = np.asarray(table, dtype=np.int64)[qw]
    qxs = qx.reshape(qx.shape[0], -1, sub)
    dxs = np.repeat(dx, per, axis=1)  # [M, sub-blocks]
    terms = s.reshape(n, -1).astype(np.float64)[None] * (dxs[:, None] * np.einsum("mji,nji->mnj", qxs, qw))
    if mn is None:
        return terms
    xsum = sx if per == 1 else dxs * qxs.sum(axis=-1)
    return np.concatenate([terms, -mn.reshape(n, -1).astype(np.float64)[None] * xsum[:, None]], axis=-1)


def int8dot_reference(qt, x: np.ndarray) -> np.ndarray:
    """y = x @ W.T as the int8dot path defines it (x through q8_1, the f16 sum field s included)."""
    return int8dot_terms(qt, x).sum(axis=-1)


GEMV_INT8DOT = OpSpec(
    name="gemv_int8dot", template="gemv_int8dot.jinja", doc="y = x @ W.T through q8_1 activations and int8 dots",
    context=_gemv_context, grid=_gemv_grid, accepts=is_int8dot_weight, grid_role="reads_prior",
    outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),), extra_variants=({"mmax": 1}, {"mmax": MAX_M}),
    name_params=("mmax",), reference=int8dot_reference, notes={"variants": False},
)  # fmt: skip
