"""quantize / quantize_stats: float values -> codes and statistics on the device, bit-equal to the
reference codec, for every row whose quantization rule follows from its facts.

The rule is read from the row, never from its family's name:
  table codes scaled by absmax, 16 entries   "nearest": nearest entry by the f32 midpoints of the
                                             sorted table, midpoints go low (bitsandbytes 4-bit)
  table codes scaled by absmax, 256 entries  "lookup": bitsandbytes' 65536-step lookup over [-1, 1]
                                             (8-bit blockwise, and the nested statistics of 4-bit rows)
  inline blocks scaled by d and m            "min_max": d = (max - min) / top, m = min
  inline blocks, unsigned codes, zero point  "zero_point": d = x[argmax |x|] / -zero
  inline blocks, signed codes                "symmetric": d = amax / qmax, q = roundf(x / d)
  integer codes times a separate scale       "absmax_int": scale = amax / max(|qmin|, qmax), rint
  inline blocks, a float scale per sub-block "sub_scale_table": the scale from the sub-block's absmax by
                                             its encoding (e8m0_half, ue4m3_half), the nearest entry
                                             by counting midpoints below |x| (magnitude_search)
  K-quant rows (formats.kquant.search)       "q8", "qkx2", "q3", "qx": llama.cpp's quantize_row_q8_K and
                                             its make_qkx2 / make_q3 / make_qx searches, operation by
                                             operation (explicit roundings: no contraction into fma)
Rows with statistics in separate arrays take two kernels: quantize_stats (one lane group per block,
row or group: its absmax and the stored statistic) and quantize (one work-item per 4 code bytes,
reading the statistics). Inline rows take one: a work-item per block (stage "inline" for 32-element
blocks with one f16 d, stage "blocks" for the rest). With nested=True the kernels
quantize a 4-bit row's block absmax (minus the offset) into absmax_q and absmax2, by the lookup
rule with the row's nested table and block. Two-level sign codes (int1: a mean scale) are refused.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...errors import QKGenValueError
from ...formats import Format, locate
from ...formats.kquant import search as kquant_search
from ...formats import reference as ref
from ..dialects import dialect
from ..source import Arg
from .quantize_fp4 import LOG2_ROUND_UP, X_REGS_WORDS, magnitude_search, pair_counts, sub_block_codes, x_bits
from .table_search import search
from .spec import OpSpec, Output, Request, grid_1d, lanes_of, one_scale_per_block

_F32 = np.float32
# status[0] = 1: a value was not finite; status[1] = 1: a stored f16 statistic overflowed (zeroed at allocation)
STATUS = Arg("status", "out", "u32")
TINY = 1e-38  # bitsandbytes' 4-bit quantizer clamps absmax to this before dividing
FLOAT_SUB_SCALES = ("e8m0_half", "ue4m3_half")  # sub-block scales that are floats, not integers times d


SEARCH_RULES = ("qkx2", "q3", "qx")  # llama.cpp's sub-block scale searches (K-quants): `lanes` work-items a block


@functools.lru_cache(maxsize=None)
def rule(fmt: Format) -> str | None:
    """The quantization rule of a row (module docstring), or None where the device has none."""
    if fmt.code == "table" and fmt.scale == "absmax" and not fmt.inline:
        return {16: "nearest", 256: "lookup"}.get(len(fmt.table))
    if fmt.inline and fmt.code == "table" and fmt.sub_scales in FLOAT_SUB_SCALES:
        return "sub_scale_table"
    k = kquant_search(fmt)
    if k is not None:
        return k["search"]
    if fmt.inline:
        if not one_scale_per_block(fmt) or fmt.step != 1:
            return None
        if fmt.scale == "d_m":
            return "min_max"
        if fmt.code == "unsigned" and fmt.zero:
            return "zero_point"
        return "symmetric" if fmt.code == "signed" else None
    if fmt.scale == "scale" and fmt.step == 1:
        return "absmax_int"  # two-level codes (int1) have step 2: a mean scale, refused
    return None


def accepts(fmt: Format) -> bool:
    return rule(fmt) is not None


def separate(fmt: Format) -> bool:
    return accepts(fmt) and not fmt.inline


def packing(fmt: Format, unit: int) -> tuple[int, list[tuple[int, int]]]:
    """(elements per byte step, [(element offset, shift) per slot]): byte k of a packing unit of
    `unit` elements holds element k * step + offset of each slot, at its shift (from locate())."""
    e = np.arange(unit)
    byte, shift = locate(fmt, e)
    step = fmt.per_byte if fmt.pack != "split" else 1
    slots = []
    for s in range(fmt.per_byte):
        first = int(np.flatnonzero(byte == 0)[s])
        slots.append((first, int(shift[first])))
    for k, (off, sh) in ((k, sl) for k in range(unit // fmt.per_byte) for sl in slots):
        assert byte[k * step + off] == k and shift[k * step + off] == sh  # the linear form holds
    return step, slots


def _table_of(req: Request) -> tuple[tuple[float, ...], str, int]:
    """(table, rule, block) the kernel quantizes with: the row's, or its nested statistics'."""
    fmt = req.fmt
    if req.nested:
        return fmt.nested_table, "lookup", fmt.nested_block
    return fmt.table, rule(fmt), req.blocksize


def _common(req: Request) -> dict:
    fmt = req.fmt
    table, how, block = _table_of(req)
    found = search(table, how == "lookup") if table else None
    ctx = dict(rule=how, unit=block, search=found, tiny=TINY,
               log_search=bool(found and found.buckets and found.buckets.kind == "log"),
               int_div=float(max(-fmt.qmin, fmt.qmax)) if how == "absmax_int" else 0.0)  # fmt: skip
    if req.nested and req.dtype != "f32":
        raise QKGenValueError(f"dtype: {req.dtype}; the nested statistics step reads the f32 absmax: allowed: f32")
    return ctx


def _scalars(req: Request) -> list[Arg]:
    args = [Arg("n", "scalar", "u64")]
    if req.scale_mode in ("row", "group"):
        args += [Arg("cols", "scalar", "u32"), Arg("groups_per_row", "scalar", "u32")]
    if req.nested:
        args.append(Arg("offset", "scalar", "f32"))
    return args


def _stats_context(req: Request) -> dict:
    lanes = lanes_of(req.target)
    wg = req.pop_wg(max(64, lanes), lanes)
    args = [Arg("x", "in", "x"), Arg("stats", "out", "f32"), *_scalars(req)]
    if not req.target.subgroups:
        args.append(Arg("scratch", "local", "f32", count=wg))
    return dict(stage="stats", args=args, lanes=lanes, wg=wg, **_common(req))


def _quantize_context(req: Request) -> dict:
    fmt = req.fmt
    how = rule(fmt)
    if fmt.inline and how not in ("min_max", "zero_point", "symmetric"):
        return _blocks_context(req, how)
    ctx = _common(req)
    if fmt.inline and not req.nested:
        step, slots = packing(fmt, fmt.block)
        x_bytes = fmt.block * (4 if req.dtype == "f32" else 2)
        wg = req.pop_wg(128, 1)
        assert x_bytes % 16 == 0 and wg * fmt.block_bytes % 4 == 0, fmt.name  # whole vectors in, whole words out
        args = [Arg("x", "in", "x"), Arg("blocks", "out", "u8", bind="data"), STATUS, Arg("nblocks", "scalar", "u64"),
                Arg("xs", "local", "u32", count=wg * (x_bytes // 4 + 1)),
                Arg("os", "local", "u32", count=wg * fmt.block_bytes // 4)]  # fmt: skip
        return dict(stage="inline", args=args, step=step, slots=slots, x_bytes=x_bytes, top=(1 << fmt.bits) - 1,
                    code_bytes=fmt.code_bytes(fmt.block), wg=wg, **ctx)  # fmt: skip
    per_byte, bits = (fmt.per_byte, fmt.low_bits) if not req.nested else (1, 8)
    args = [Arg("x", "in", "x"), Arg("stats", "in", "f32"), Arg("codes", "out", "u8", bind="data"), STATUS,
            *_scalars(req)]  # fmt: skip
    return dict(stage="codes", args=args, per_byte=per_byte, mask=(1 << bits) - 1,
                shift_expr=_shift_expr(fmt, req.nested), wg=req.pop_wg(256, 1), **ctx)  # fmt: skip


PER_LANE = 16  # elements a work-item of quantize_blockwise takes by default (H100, 2026-11-25: 8 was 10-12% slower)
# quantize_blockwise's tiles a work-group where its search's tables take TILED_TABLE_BYTES or more of
# local memory: they are copied once for the tiles. NVIDIA H200, 2026-12-03
# (docs/bench/scripts/quantsweep.py, x 4096 x 14336, kernel alone): blockwise8 bs 256 (13 KB), run
# 209 (qsweep_s41.json), tiles 1 / 4 / 8 / 16, f16 x 76.0 / 69.1 / 72.2 / 75.0 us, f32 x 92.8 / 86.8
# / 87.1 / 88.2; run 210 (qsweep_s41b.json, the absmax within a sub-group), 2 / 4 / 8: f16 62.4 /
# 60.1 / 60.9, f32 82.6 / 83.2 / 91.7. fp4 bs 64 (1088 bytes), run 215 (qsweep_s42b.json), 1 / 2 / 4:
# f16 56.4 / 56.4 / 53.9, f32 77.9 / - / 70.8. nf4 (128 bytes): 1 (run 209: f16 46.5 against 51.1 at
# 4; run 215: f32 68.1 at both).
TILES, TILED_TABLE_BYTES = 4, 1024


def _table_args(ctx: dict) -> list[Arg]:
    """The search's tables in local memory, where quantize_blockwise's work-group copies them."""
    found = ctx["search"]
    b = found.buckets
    if ctx["log_search"]:  # the log buckets' entries
        return [Arg("entry", "local", "u32", count=len(b.entries))]
    if b:  # the bucket search's two tables (base as the keys' byte offsets: 4 x the count, a byte)
        assert 4 * max(b.base) <= 255, b
        return [Arg("keys", "local", "f32", count=len(b.keys)), Arg("base", "local", "u8", count=len(b.base))]
    return [Arg("keys", "local", "f32", count=len(found.keys))]


def blockwise(fmt: Format) -> bool:
    """Rows whose absmax per block and codes one kernel makes (quantize_blockwise)."""
    return separate(fmt) and rule(fmt) in ("nearest", "lookup")


def _blockwise_context(req: Request) -> dict:
    """A block's lanes hold PER_LANE elements each: its absmax by a local-memory tree, then the codes."""
    fmt = req.fmt
    if req.nested:
        raise QKGenValueError("nested: quantize_blockwise makes the first level; allowed: False")
    ctx = _common(req)
    per_lane = req.pop_int("per_lane", PER_LANE, 8, 32)
    if per_lane & (per_lane - 1) or req.blocksize % per_lane:
        raise QKGenValueError(f"per_lane: {per_lane}; allowed: 8, 16 or 32, dividing the blocksize {req.blocksize}")
    lanes = req.blocksize // per_lane
    wg = req.pop_wg(max(256, lanes), lanes)
    tables = _table_args(ctx)
    tiles = req.pop_int("tiles", TILES if sum(a.nbytes() for a in tables) >= TILED_TABLE_BYTES else 1, 1, 64)
    lane_bytes = per_lane // fmt.per_byte
    # whole words a lane; the lookup rule's code of 0 is not its pad (0), so its tail slots must not be stored
    assert lane_bytes % 4 == 0 and (ctx["rule"] == "nearest" or fmt.per_byte == 1), fmt.name
    args = [Arg("x", "in", "x"), Arg("absmax", "out", "f32"), Arg("codes", "out", "u8", bind="data"), STATUS,
            Arg("n", "scalar", "u64")]  # fmt: skip
    if dialect(req.target).row_max_subgroup(lanes) is None:  # the absmax's tree
        args.append(Arg("scratch", "local", "f32", count=wg))
    args += tables
    return dict(stage="blockwise", args=args, lanes=lanes, per_lane=per_lane, tiles=tiles,
                min_groups=req.pop_min_groups(), per_byte=fmt.per_byte,
                mask=(1 << fmt.low_bits) - 1, shift_expr=_shift_expr(fmt, False), wg=wg, **ctx)  # fmt: skip


def _blocks_context(req: Request, how: str) -> dict:
    """Stage "blocks": a work-item per block (the K-quant searches: `lanes` work-items a block, each
    searching nsub / lanes sub-blocks), every plane packed by plane_bytes(). The FP4 rows
    (sub_scale_table) stage the group's x and blocks through local memory, as stage "inline" does
    (x_bytes: a block of x; 0 where a work-item reads and writes its own block in global memory)."""
    fmt = req.fmt
    args = [Arg("x", "in", "x"), Arg("blocks", "out", "u8", bind="data"), STATUS, Arg("nblocks", "scalar", "u64")]
    x_bytes = fmt.block * (4 if req.dtype == "f32" else 2) if how == "sub_scale_table" else 0
    nsub = fmt.sub_count
    ctx = dict(stage="blocks", rule=how, args=args, planes=plane_bytes(fmt), x_bytes=x_bytes,
               sub=fmt.sub_block or fmt.block, nsub=nsub, k=kquant_search(fmt) or {}, min_groups=0)  # fmt: skip
    if how in SEARCH_RULES:
        # lanes: work-items a block, each taking nsub / lanes sub-blocks through the search; the
        # block's scales and codes meet in local memory. One sub-block a work-item where the register
        # file is small (Target.registers): a whole block's search kept 2112-2432 bytes a work-item in
        # memory on dg2 (ocloc, sub-group 16), one sub-block's 0-640 (docs/intel.md).
        lanes = req.pop_int("lanes", nsub if req.target.few_registers else 1, 1, nsub)
        if nsub % lanes:
            raise QKGenValueError(f"lanes: {lanes}; allowed: a divisor of {nsub}, the sub-blocks of a {fmt.name} block")
        wg = req.pop_wg(64, lanes)
        nstat = 2 * nsub if how == "qkx2" else nsub  # scales (and mins) of each block of the work-group
        if lanes > 1:
            args += [Arg("stats", "local", "f32", count=wg // lanes * nstat),
                     Arg("codes", "local", "u32", count=wg // lanes * fmt.block // 4)]  # fmt: skip
        ctx.update(lanes=lanes, nstat=nstat)
    else:
        wg = req.pop_wg(64, 4 if x_bytes else 1)
    if x_bytes:
        assert x_bytes % 16 == 0 and wg * fmt.block_bytes % 4 == 0, fmt.name  # whole vectors in, whole words out
        args += [Arg("xs", "local", "u32", count=wg * (x_bytes // 4 + 1)),
                 Arg("os", "local", "u32", count=wg * fmt.block_bytes // 4)]  # fmt: skip
    ctx["wg"] = wg
    k = ctx["k"]
    if how == "qkx2":  # the trial numerators rmin + rdelta * step + nmax, in float32 as the host rounds them
        ctx["trials"] = tuple(float(_F32(_F32(k["rmin"]) + _F32(k["rdelta"]) * _F32(s)) + _F32(k["nmax"]))
                              for s in range(k["nstep"] + 1))  # fmt: skip
    elif how == "qx":  # -(nmax + 0.1 * step), step = -9..9 but 0
        ctx["trials"] = tuple(float(-(_F32(k["nmax"]) + _F32(0.1) * _F32(s))) for s in (*range(-9, 0), *range(1, 10)))
    if how == "sub_scale_table":
        top = max(fmt.table) / 2  # the table is E2M1 doubled, its scales halved: the largest E2M1 value
        ctx.update(fp4_max=top, fp4_emax=int(np.floor(np.log2(top))), log2_round_up=LOG2_ROUND_UP,
                   sub_codes=sub_block_codes(fmt), xt=x_bits(req.dtype, ctx["sub"]), **magnitude_search(fmt))  # fmt: skip
        ctx["x_regs"] = req.pop_bool("x_regs", ctx["xt"]["words"] <= X_REGS_WORDS)
        pairs = pair_counts(fmt, req, ctx)
        use_pairs = req.pop_bool("pairs", pairs is not None)
        if use_pairs and pairs is None:
            raise QKGenValueError(f"pairs: True; allowed: f16 x with fp16 arithmetic, bf16 x with bf16 (x: {req.dtype})")
        ctx["pairs"] = pairs if use_pairs else None
        ctx["min_groups"] = req.pop_min_groups()
    return ctx


def plane_bytes(fmt: Format) -> list[dict]:
    """Per plane of an inline row: its field's offset, byte count, bit shift and mask, and for each slot
    of a byte k the C expression of its element (from locate(), checked here) and its bit shift."""
    out = []
    for plane in fmt.planes:
        count = fmt.block * plane.bits // 8
        byte, shift = plane.locate(np.arange(fmt.block))
        k = np.arange(count)
        if plane.pack == "split" and plane.unit < fmt.block:
            first, expr = k // plane.run * plane.unit + k % plane.run, f"k / {plane.run}u * {plane.unit}u + k % {plane.run}u"
            step = plane.run
        elif plane.pack == "split":
            first, expr, step = k, "k", plane.run
        else:
            first, expr, step = k * plane.per_byte, f"k * {plane.per_byte}u" if plane.per_byte > 1 else "k", 1
        var = "k" if expr == "k" else "e"
        terms = []
        for s in range(plane.per_byte):
            e = first + s * step
            assert (byte[e] == k).all() and len(set(shift[e])) == 1, fmt.name  # the linear form holds
            code = f"q[{var}{f' + {s * step}u' if s else ''}]{f' >> {plane.shift}u' if plane.shift else ''}"
            sh = int(shift[e][0])
            terms.append(code if plane.mask == 255 else f"({code} & {plane.mask}u){f' << {sh}u' if sh else ''}")
        lines = [" | ".join(terms[i : i + 2]) for i in range(0, len(terms), 2)]  # two slots a line
        value = "(uchar)" + (terms[0] if len(terms) == 1 else "(" + " |\n            ".join(lines) + ")")
        out.append(dict(at=fmt.offsets[plane.field], count=count, shift=plane.shift, bits=plane.bits,
                        per_byte=plane.per_byte, first=None if var == "k" else expr, value=value, field=plane.field))
    return out


def _shift_expr(fmt: Format, nested: bool) -> str:
    """The C expression (with a trailing " + ") of slot j's shift in its byte, from locate(); empty
    for one code a byte. Separate-statistics rows pack element j of a byte's run into slot j."""
    if nested or fmt.per_byte == 1:
        return ""
    step, slots = packing(fmt, fmt.per_byte)
    assert step == fmt.per_byte and [off for off, _ in slots] == list(range(fmt.per_byte)), fmt.name
    first, b = slots[0][1], fmt.low_bits
    if [sh for _, sh in slots] == [b * j for j in range(fmt.per_byte)]:
        return f"{b}u * j + "
    assert [sh for _, sh in slots] == [first - b * j for j in range(fmt.per_byte)], fmt.name
    return f"{first}u - {b}u * j + "


def units(fmt: Format, sizes: dict, nested: bool, blocksize: int, scale_mode: str | None) -> int:
    """Statistics the stats kernel writes: blocks, rows, groups, or one for the tensor."""
    if nested:
        return -(-sizes["n"] // fmt.nested_block)
    if scale_mode == "tensor":
        return 1
    if scale_mode == "row":
        return sizes["n"] // sizes["cols"]
    if scale_mode == "group":
        return sizes["n"] // sizes["cols"] * sizes["groups_per_row"]
    return -(-sizes["n"] // blocksize)


def _stats_grid(ks, sizes: dict):
    per_group = ks.wg // ks.param("lanes")
    return grid_1d(-(-sizes["units"] // per_group) * ks.wg, ks.wg)


def _blockwise_grid(ks, sizes: dict):
    span = ks.wg * ks.param("per_lane") * ks.param("tiles")  # a work-group's elements
    return grid_1d(-(-sizes["n"] // span) * ks.wg, ks.wg)


def _quantize_grid(ks, sizes: dict):
    if "nblocks" in sizes:  # a work-item a block, or `lanes` of them (the K-quant searches)
        return grid_1d(sizes["nblocks"] * (ks.param("lanes") or 1), ks.wg)
    return grid_1d(-(-sizes["code_bytes"] // 4), ks.wg)


@dataclass(frozen=True)
class _QuantizeSpec(OpSpec):
    """The nested statistics step reads f32 absmax only: its other dtypes are not kernels."""

    def variants(self, fmt: Format) -> Iterator[dict]:
        for v in super().variants(fmt):
            if v.get("nested") and (v["dtype"] != "f32" or self.name == "quantize_blockwise"):
                continue  # quantize_blockwise makes the first level only
            yield v


QUANTIZE_STATS = _QuantizeSpec(
    name="quantize_stats", template="quantize.jinja",
    doc="values -> one statistic per block / row / group (absmax, scale), for rows with separate statistics",
    context=_stats_context, grid=_stats_grid, accepts=separate,
    outputs=(Output("stats", "f32", lambda s: s["units"]),),
    reference=lambda x, fmt, **kw: ref.quantize(x, fmt, **kw),
)  # fmt: skip

QUANTIZE = _QuantizeSpec(
    name="quantize", template="quantize.jinja", doc="values (+ statistics) -> packed codes or whole GGUF blocks",
    context=_quantize_context, grid=_quantize_grid, accepts=accepts,
    outputs=(Output("data", "u8", lambda s: s["code_bytes"]), Output("status", "u32", lambda s: 2, zero=True)),
    reference=lambda x, fmt, **kw: ref.quantize(x, fmt, **kw).data,
)  # fmt: skip

QUANTIZE_BLOCKWISE = _QuantizeSpec(
    name="quantize_blockwise", template="quantize.jinja",
    doc="values -> absmax per block and codes in one pass, for rows with separate per-block statistics",
    context=_blockwise_context, grid=_blockwise_grid, accepts=blockwise,
    outputs=(Output("absmax", "f32", lambda s: s["units"]), Output("data", "u8", lambda s: s["code_bytes"]),
             Output("status", "u32", lambda s: 2, zero=True)),
    reference=lambda x, fmt, **kw: ref.quantize(x, fmt, **kw).data,
)  # fmt: skip
