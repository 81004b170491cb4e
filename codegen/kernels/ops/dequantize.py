"""dequantize: codes + statistics -> f32/f16/bf16 values, one chunk of `ept` elements per work-item."""

from __future__ import annotations

from ... import dtypes
from ...errors import QKGenValueError
from ...formats import family_of, locate
from ...formats import reference as ref
from ..cexpr import Sym, bare
from ..source import Arg
from .spec import (grid_1d, one_scale_per_block, OpSpec, Output, Request, load_align, low_pow2, table_locals,
                   weight_args)


def chunking(req: Request, whole_blocks: bool = False, cap: int | None = None,
             half_word: bool = False) -> tuple[int, int, int]:
    """(elements, code bytes, load alignment) of the chunk one work-item decodes at a time: aim
    for 16 bytes of codes (one vector load) inside one block or group (one scale). A split-packed
    chunk stays inside one slot run (its elements share `slot`, each takes its own byte) unless
    `whole_blocks`: then it is the whole block, every byte read once for all its slots. `cap`: at
    most that many elements by default where the format allows (not a whole split block; one word
    of codes: 4 bytes, or 4 elements of a split run, which take a byte each). `half_word`: a
    chunk of 4 elements of a separate array of 4-bit codes may be 2 bytes, one 16-bit load (where
    the template takes it)."""
    fmt = req.fmt
    limit = family_of(fmt).chunk_limit(fmt, req.blocksize, req.scale_mode)
    whole = whole_blocks and fmt.pack == "split" and limit == fmt.block
    run_limit = min(limit, fmt.run) if fmt.pack == "split" else limit
    default = limit if whole else min(16 * fmt.per_byte, run_limit)
    half_word = half_word and not fmt.inline and fmt.pack != "split" and fmt.per_byte == 2  # 4 elements
    if cap and not whole:
        least = 4 if fmt.pack == "split" else (2 if half_word else 4) * fmt.per_byte
        default = min(default, max(cap, least))
    ept = req.pop_int("ept", default, 1, 1 << 16)
    whole = whole and ept == limit  # a smaller chunk asked for stays inside one slot run
    if not whole:
        limit = run_limit
    chunk_bytes = ept // fmt.per_byte if whole or fmt.pack != "split" else ept
    words = chunk_bytes % 4 == 0 or (half_word and chunk_bytes == 2)
    if ept > limit or limit % ept or not words or ept % fmt.per_byte:
        whole_words = "whole 32-bit words of codes" + (" (or one 16-bit half word)" if half_word else "")
        raise QKGenValueError(f"ept: {ept} must divide {limit} and cover {whole_words}")
    return ept, chunk_bytes, code_load_align(fmt, chunk_bytes)


def code_load_align(fmt, chunk_bytes: int) -> int:
    """The alignment of a chunk's run of code bytes: from the block's layout for inline rows; a
    separate codes array is taken as 16-byte aligned, so its chunks as aligned as their size allows."""
    return load_align(fmt, fmt.codes_field, chunk_bytes) if fmt.inline else min(16, low_pow2(chunk_bytes))


def chunk_code_at(req: Request, ept: int) -> tuple[Sym, Sym]:
    """(byte, shift) of chunk element i, from the format's own locate(): the chunk's code bytes are
    one run (for split packing inside one slot run, its elements sharing `slot`, unless the chunk
    is the whole block)."""
    fmt = req.fmt
    i = Sym.var("i", ept)
    e = i + Sym.var("slot", fmt.per_byte) * fmt.run if fmt.pack == "split" and ept <= fmt.run else i
    return locate(fmt, e)


def decodes(fmt) -> bool:
    """Rows the dequantize and embedding templates decode: those of one_scale_per_block, and inline
    rows whose scale is a one-value d (f16, or f32 at a 4-byte aligned offset) or sub-block scales
    of any encoding (times an f16/f32 d and an f16 dmin where the encoding says), their high bits
    either q5_0's block-wide 32-bit word or split-packed in units (K-quants)."""
    if one_scale_per_block(fmt):
        return True
    if not fmt.inline or fmt.scale not in ("d", "d_m"):
        return False

    def scalar(name: str, types: tuple[str, ...]) -> bool:
        f = fmt.member(name) if fmt.has_field(name) else None
        aligned = f is not None and (f.ctype != "f32" or (fmt.offsets[name] % 4 == 0 and fmt.block_align >= 4))
        return aligned and f.count == 1 and f.ctype in types

    if fmt.sub_scales is None:
        scale_ok = scalar("d", ("f16", "f32")) and (fmt.scale == "d" or scalar("m", ("f16",)))
    else:
        times_d = fmt.sub_scales in ("k4", "k3", "nibbles", "i8")
        scale_ok = (not times_d or scalar("d", ("f16", "f32"))) and (not fmt.has_min or scalar("dmin", ("f16",)))
    legacy_high = fmt.high_unit is None and fmt.high_bits == 1 and fmt.block == 32
    return scale_ok and (not fmt.high_bit_field or legacy_high or fmt.high_unit is not None)


def chunk_start(req: Request, ept: int) -> dict:
    """Where a chunk starting at block element eb (a multiple of ept) reads each code plane, as C:
    the slot its elements share and its first byte in the low plane (from locate()), and for a
    split high plane the same plus what each element reads (high: words wh, code_at, mask, shift)."""
    fmt = req.fmt
    eb = Sym.var("eb", fmt.block)
    out: dict = {"high": None}
    if fmt.pack == "split":
        low = fmt.planes[0]
        out.update(slot=bare(((eb % low.unit) // low.run).c()), byte=bare(locate(fmt, eb)[0].c()))
    if fmt.high_bit_field and fmt.high_unit is not None:
        p = fmt.planes[1]
        if ept > p.run or p.run % ept:
            raise QKGenValueError(f"ept: {ept} must divide the high bits' run of {p.run} bytes")
        i = Sym.var("i", ept)
        chunk_bytes = ept  # one byte per element: the chunk lies in one slot run
        out["high"] = dict(bits=p.bits, shift=p.shift, unit=p.unit, run=p.run, mask=p.mask,
                           slot=bare(((eb % p.unit) // p.run).c()), byte=bare(locate(fmt, eb, 1)[0].c()),
                           code_at=locate(fmt, i + Sym.var("hslot", p.per_byte) * p.run, 1),
                           chunk_bytes=chunk_bytes, align=load_align(fmt, p.field, chunk_bytes))  # fmt: skip
    return out


def _context(req: Request) -> dict:
    # A chunk's output is one 16-byte store (8 f16/bf16 or 4 f32 values, or the least whole words
    # of codes allow), so a sub-group's stores cover one contiguous span; with scales per row or
    # group and 16-bit outputs, 32 bytes (their per-element scale lookup is paid per chunk). H100,
    # 8192^2 -> bf16 (docs/bench/2026-11-23-h100-dequantize-split.md): 16 code bytes per chunk gave
    # 57-81% of copy, 16 output bytes 85-95% (with cpi below), int4 row scales 86% at 32. A 32-byte
    # f32 chunk is two stores, each writing every other 16 bytes of a sub-group's span: H200,
    # 8192^2 -> f32, kernel alone, cold (run 175, sweep 72), 8 -> 4 elements a chunk (4-bit rows: 2
    # code bytes, one 16-bit load): nf4 112.7 -> 83.7 us (64% -> 86% of copy), int8 row 116.2 ->
    # 92.3, nf4 nested 86.6 -> 86.0, blockwise8 and q8_0 equal.
    per_element = req.scale_mode in ("row", "group")
    size = dtypes.get(req.dtype).size
    store = (32 if per_element and size < 4 else 16) // size
    ept, chunk_bytes, align = chunking(req, cap=store, half_word=True)
    tables, local_arrays = table_locals(req)
    args = weight_args(req) + [Arg("out", "out", req.dtype), Arg("n", "scalar", "u64")]
    if per_element:
        args += [Arg("cols", "scalar", "u32"), Arg("groups_per_row", "scalar", "u32")]
    # cpi: chunks per work-item, in runs of wg neighbouring chunks (1: one chunk, no loop). Where the
    # work-group first fills local tables (table codes, nested statistics) or reads per-element
    # scales, 4 chunks each: nf4 nested 64% -> 85% of copy, int4 row 78% -> 86%; elsewhere 1 was
    # as fast or faster (q4_0 94% against 91%).
    setup = bool(local_arrays) or req.nested  # the work-group sets up local tables first
    cpi = req.pop_int("cpi", 4 if setup or per_element else 1, 1, 64)
    return dict(ept=ept, chunk_bytes=chunk_bytes, code_align=align, code_at=chunk_code_at(req, ept), tables=tables,
                at=chunk_start(req, ept), args=args + local_arrays, cpi=cpi, wg=req.pop_wg(256, 1),
                prefetch=_prefetch(req, setup, cpi))  # fmt: skip


def _prefetch(req: Request, setup: bool, cpi: int) -> bool:
    """The prefetch knob: each work-item asks L2 for its codes of every turn before the barrier that
    follows the tables' setup, so DRAM serves them meanwhile (where the dialect spells it, for rows
    with a codes array of their own, local tables and turns). H200, 8192^2, kernel alone, cold
    (run 171, sweep 68, docs/bench/2026-12-02-h200-session32.md): nf4 nested -> bf16 49.0 -> 45.6 us
    (81% -> 87% of copy); asking one turn ahead inside the loop instead: 46.5, and slower for the
    rows without tables (int4 groups 48.9 -> 53.3, int8 row 54.7 -> 57.3). Off for f32 outputs: nf4
    nested 101.0 -> 119.0 us (chunks of 8 elements then, run 172), 87.4 -> 112.5 at cpi 2 (run 174)."""
    fits = setup and cpi > 1 and not req.fmt.inline and req.d.prefetch_l2 is not None
    prefetch = req.pop_bool("prefetch", fits and dtypes.get(req.dtype).size == 2)
    if prefetch and not fits:
        raise QKGenValueError(f"prefetch: True for {req.fmt.name} (cpi {cpi}) on {req.target.name}; allowed: True only "
                              "for rows with a codes array and local tables or nested statistics, cpi above 1, on "
                              "targets whose dialect spells an L2 prefetch (CUDA)")  # fmt: skip
    return prefetch


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return grid_1d(-(-sizes["n"] // (ks.param("ept") * ks.param("cpi"))), ks.wg)


SPEC = OpSpec(
    name="dequantize", template="dequantize.jinja", doc="codes + statistics -> values (f32, f16, bf16)",
    context=_context, grid=_grid, outputs=(Output("out", "dtype", lambda s: s["n"]),),
    reference=lambda qt: ref.dequantize(qt),
    accepts=decodes,
)  # fmt: skip
