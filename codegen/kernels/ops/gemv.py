"""gemv: y[m, n] = sum_k x[m, k] * W[n, k] for a quantized W, decoded in registers (the float path)."""

from __future__ import annotations

import numpy as np

from ...errors import QKGenValueError
from ...formats import codec, locate
from ...formats import reference as ref
from ..cexpr import Sym
from ..source import Arg
from .dequantize import chunk_code_at, chunk_start, chunking, decodes
from .spec import LOCAL_BYTES, MAX_M, part_index, OpSpec, Output, Request, lanes_of, table_locals, weight_args

# At M = 1 a chunk is decoded and multiplied GROUP elements at a time (one word of 4-bit codes, 16
# bytes of 16-bit x), so a lane group's rows need GROUP values each in registers, not a whole chunk,
# and 4 rows fit where 2 did (runtime.paths.FLOAT_M1_KNOBS). M > 1 keeps the whole chunk decoded once
# for every row of x: grouped, q8_0 f16 x at M = 8 took 73.6 us, not 63.4 (NVIDIA H200, 2026-11-28,
# run 159, sweep 58, kernel alone, cold).
GROUP = 8

# pairs (M = 1, 16-bit x, two 4-bit codes a byte): a byte of codes looks its two values up as one pair
# of x's type, in a 256-entry table with a copy for each of up to PAIR_COPIES lanes (lane l reads copy
# l, at bank l: no two lanes of a warp meet in a bank, whatever their bytes), and multiplies them with
# x's pair in one instruction; a word's 4 products add up in that type, then in f32. Half the table
# reads and multiplies of the float decode, at 16-bit products (check.gemv_error: pairs).
PAIR_COPIES = 32


def gemv_reference(qt, x: np.ndarray) -> np.ndarray:
    """The float64 product x @ W.T of f32 activations x [M, K] and the dequantized weight."""
    return x.astype(np.float64) @ ref.dequantize(qt).astype(np.float64).T


def _context(req: Request) -> dict:
    fmt, t = req.fmt, req.target
    mmax = req.pop_int("mmax", 1, 1, MAX_M)
    # Defaults measured on an H100 (docs/bench/2026-11-23-h100-gemv-sweep.md), 4096 x 14336, f16/f32 x:
    # - M = 1: two lane groups per row group (slices) put twice the warps in flight: 54 -> 58% of copy
    #   for q4_0, 74 -> 78% for q8_0, 41 -> 44% for nf4; rows per lane group 2 for 32-element chunks
    #   (4-bit), 1 otherwise (4 rows of q8_0 took 2x longer: too few warps).
    # - M = 8: 16-element chunks of 4 rows each, so x chunks (re-read per row group) serve 4 rows
    #   and stay few registers: nf4 f32 x 257 -> 133 us, q8_0 f16 x 109 -> 76 us. Split-packed
    #   rows (q4_0..q5_1) keep whole 32-element blocks.
    # A small register file (Target.registers; Intel GPUs): a lane's arrays went to memory at these
    # defaults. Intel's offline compiler for dg2 (ocloc, sub-group 16, docs/intel.md): at M = 8 4
    # rows of 16-32 elements kept 552-944 bytes a work-item in memory for every row of the table;
    # 1 row of 8 elements, none; through SYCL, 1 row of q4_1's or q5_1's whole blocks still kept 304
    # bytes, so split-packed rows take 8 elements there too. At M = 1 with f32 x, 4 rows of 32
    # elements kept 320-576 bytes for 9 rows; 2 rows, none.
    small = t.few_registers
    cap = (8 if small else 16) if mmax > 1 else None
    ept, chunk_bytes, align = chunking(req, whole_blocks=not (small and mmax > 1), cap=cap)
    whole = fmt.inline and ept == fmt.block
    # A split-packed chunk smaller than its block (K-quants, NVFP4) shares a slot: its code words
    # are shifted to slot 0 where they are loaded, so the decode reads them as slot 0 (code_at).
    slotted = fmt.pack == "split" and not whole
    at = chunk_start(req, ept) if fmt.inline and (slotted or fmt.high_unit is not None) else None
    i = Sym.var("i", ept)
    high = at and at["high"] and {**at["high"], "code_at": locate(fmt, i, 1)}
    # M = 1 with f32 x: twice the rows, as each x chunk is twice the bytes (H100, f32 x, cold: q4_0
    # 38.1 -> 27.6 us, q8_0 44.2 -> 30.2, nf4 nested 46.4 -> 35.1, int4 row 35.5 -> 25.5).
    wide_x = 2 if req.dtype == "f32" and not small else 1
    rpw = req.pop_int("rpw", (1 if small else 4) if mmax > 1 else (2 if ept == 32 else 1) * wide_x, 1, 8)
    fast = req.pop_bool("fast_decode", True) and fmt.code != "table"  # tables decode by lookup anyway
    lanes = lanes_of(t)
    # M > 1: x staged in local memory as f32 for 8 lane groups (wg 256), their sums added up there
    # too (H100, 4096 x 14336, f16 x, cold, sweep 7s in docs/bench/2026-11-24-h100-planes-stage-x.md:
    # nf4 nested 67.8 -> 55.6 us, q8_0 76.4 -> 64.2, int4 row 64.3 -> 56.5, q4_0 82.8 -> 73.5); at
    # M = 1 staging was slower for every format but nf4 (within 5%), so it stays off there. Nor is it
    # the default where two slices' x would not fit in local memory (whole 32-element blocks at M = 8):
    # with one slice, NVIDIA's OpenCL took q4_0 from 97.7 to 130.8 us (CUDA: 82.8 -> 73.5).
    two_fit = mmax * lanes * 2 * _chunk_stride(ept) * 4 <= LOCAL_BYTES
    stage_x = req.pop_bool("stage_x", mmax > 1 and two_fit)
    x_size = 4 if req.dtype == "f32" else 2
    # With stage_x, one slice where two would stage more x than local memory holds (whole 32-element
    # blocks at M = 8): more lane groups per work-group (wg) put warps in flight instead.
    fits = not stage_x or two_fit
    slices = req.pop_int("slices", 2 if fits else 1, 1, 16)
    # Lane groups sharing a row group, each taking every slices-th chunk of its rows.
    wg = req.pop_wg(256 if stage_x and mmax > 1 else 128, lanes * slices)
    tables, local_arrays = table_locals(req)
    pairs = req.pop_bool("pairs", False)
    copies = min(lanes, PAIR_COPIES)
    if pairs:
        _check_pairs(req, mmax, ept)
        # the pair table replaces the code table's local copy; the fill reads the constant TABLE (the
        # code values of an integer row: table_locals gives table rows theirs)
        tables.setdefault("TABLE", codec.raw_code_values(fmt))
        local_arrays = [Arg("pairs", "local", "u32", count=256 * copies)] + [a for a in local_arrays if a.name != "lut"]
    sums = rpw * mmax  # each lane's partial sums, one per row and activation row
    # local_sums: the team's sums added up in local memory (one barrier) rather than by sub-group
    # shuffles; where there are no sub-groups, always
    local_sums = req.pop_bool("local_sums", stage_x and mmax > 1) or not t.subgroups
    stage = stage_x and _stage_x(ept, x_size, lanes * slices, mmax)
    if pairs and stage:
        raise QKGenValueError("pairs: True reads x from global memory, in pairs; allowed: stage_x False with pairs")
    # prefetch: the next chunk's codes and scales loaded before this one's are decoded (two chunks'
    # loads in flight a lane); off by default until timed
    prefetch = req.pop_bool("prefetch", False)
    if prefetch and stage:
        raise QKGenValueError("prefetch: True is written for x read from global memory; allowed: False with stage_x")
    scratch = wg * (sums + 1) if local_sums else 0
    if stage and local_sums:  # the staged x and, after the last step, the sums share one array
        local_arrays.append(Arg("scratch", "local", "f32", count=max(scratch, stage["count"]), align=16))
    elif stage:
        local_arrays.append(Arg("xs", "local", "f32", count=stage["count"], align=16))
    if local_sums and not stage:  # every lane's sums side by side, a padded row each (see the template)
        local_arrays.append(Arg("scratch", "local", "f32", count=scratch))
    elif slices > 1 and not local_sums:
        local_arrays.append(Arg("partial", "local", "f32", count=wg // lanes * sums))
    if stage:
        _check_local_bytes(local_arrays, scratch, slices, ept, mmax, wg)
    args = weight_args(req) + [Arg("x", "in", "x"), Arg("y", "out", req.dtype), Arg("N", "scalar", "u32"),
                               Arg("K", "scalar", "u32"), Arg("M", "scalar", "u32")]  # fmt: skip
    if req.scale_mode == "group":
        args.append(Arg("groups_per_row", "scalar", "u32"))
    # the per-row arrays a chunk's loads fill (the template's chunk_arrays; prefetch keeps two sets)
    chunk_vars = [("uint", "wq", chunk_bytes // 4), ("float", "sr", 0)]
    if fmt.scale == "d_m":
        chunk_vars.append(("float", "mr", 0))
    if high:
        chunk_vars.append(("uint", "whq", high["chunk_bytes"] // 4))
    elif fmt.high_bit_field:
        chunk_vars.append(("uint", "qhr", 0))
    return dict(ept=ept, chunk_bytes=chunk_bytes, chunk_vars=chunk_vars, code_align=align, code_at=locate(fmt, i) if slotted else chunk_code_at(req, ept),
                at=at, high=high, slotted=slotted, tables=tables,
                args=args + local_arrays, lanes=lanes, team=lanes * slices, slices=slices, groups=wg // (lanes * slices), rpw=rpw, part_at=part_index(rpw, mmax), sums=sums, local_sums=local_sums, mmax=mmax, fast_decode=fast,
                whole=whole, x_size=x_size, x_bytes=ept * x_size, group=GROUP if ept % GROUP == 0 else ept, wg=wg, stage_x=bool(stage), prefetch=prefetch,
                pairs=pairs, copies=copies, pair_shift=(copies * 4).bit_length() - 1, pair_mask=255 * copies * 4,
                xs="scratch" if local_sums else "xs", **(stage or {}))  # fmt: skip


def pairs_apply(fmt, dtype: str, t, m: int = 1) -> bool:
    """Whether the byte-pair decode (pairs) renders for this row, x dtype, target and M: two codes a
    byte, each a value times the chunk's one scale (a table row or an integer row with statistics of
    its own: nf4, fp4, int4), 16-bit x with pair arithmetic on the target, M = 1."""
    pair_math = t.fp16 if dtype == "f16" else t.bf16 if dtype == "bf16" else False
    return m == 1 and two_codes_a_byte(fmt) and pair_math


def two_codes_a_byte(fmt) -> bool:
    """Rows a byte-pair table serves: two codes a byte, each a value times one scale of its chunk (a
    table row or an integer row with statistics arrays of its own: nf4, fp4, int4)."""
    return fmt.per_byte == 2 and fmt.pack == "interleaved" and not fmt.inline and fmt.scale != "d_m"


def require_pairs(fmt, dtype: str, t, m: int, what: str, rows: str) -> None:
    """Refuse the byte-pair decode where pairs_apply says no: `what` names the request ("pairs: True",
    "path: 'pairs'"), `rows` the rows of x it has ("mmax 8", "M = 3")."""
    if not pairs_apply(fmt, dtype, t, m):
        raise QKGenValueError(f"{what} with {fmt.name}, {dtype} x, {rows} on {t.name}; allowed: a row of two codes a "
                              "byte with statistics of its own (nf4, fp4, int4), one row of x, f16 x where the "
                              "device has f16 arithmetic, bf16 x where it has bf16's")  # fmt: skip


def _check_pairs(req: Request, mmax: int, ept: int) -> None:
    require_pairs(req.fmt, req.dtype, req.target, mmax, "pairs: True", f"mmax {mmax}")
    if ept % GROUP:
        raise QKGenValueError(f"ept: {ept}; allowed with pairs: a multiple of {GROUP} (a code word at a time)")


def _chunk_stride(ept: int) -> int:
    """Floats from one staged x chunk to the next. 8 lanes' 16-byte local reads (one phase of a
    warp's) hit 8 different 4-bank groups when chunks are an odd number of float4 apart: chunks of
    an even number are padded by one float4."""
    return ept + (4 if ept // 4 % 2 == 0 else 0)


def _stage_x(ept: int, x_size: int, team: int, mmax: int) -> dict:
    """stage_x: the work-group stages each step's x (the team's chunks, every m) in local memory as
    f32, once for all its lane groups. The template values of that."""
    if ept % 4:
        raise QKGenValueError(f"ept: {ept}; allowed with stage_x: a multiple of 4 (chunks are read as float4)")
    xchunk = _chunk_stride(ept)
    per = min(ept, 16 // x_size)  # elements per staging load: 16 bytes, or the whole chunk
    return dict(count=mmax * team * xchunk, xchunk=xchunk, xrow=team * xchunk, per=per, ppc=ept // per,
                pieces=team * (ept // per), piece_bytes=per * x_size)  # fmt: skip


def _check_local_bytes(local_arrays: list, scratch: int, slices: int, ept: int, mmax: int, wg: int) -> None:
    """Refuse a stage_x kernel whose local arrays pass LOCAL_BYTES, naming what to lower: wg where
    the sums in local memory (a row per lane) alone pass it, else slices (the staged x)."""
    need = sum(a.count for a in local_arrays) * 4
    if need <= LOCAL_BYTES:
        return
    what = f"wg: {wg}" if scratch * 4 > LOCAL_BYTES else f"slices: {slices}"
    raise QKGenValueError(f"{what}; with stage_x at mmax {mmax}, ept {ept}, slices {slices}, wg {wg} the kernel needs "
                          f"{need} bytes of local memory; allowed: at most {LOCAL_BYTES} (fewer slices, a smaller "
                          f"ept or wg)")  # fmt: skip


def _grid(ks, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    rows = ks.wg // (ks.param("lanes") * ks.param("slices")) * ks.param("rpw")
    return (-(-sizes["N"] // rows) * ks.wg,), (ks.wg,)


SPEC = OpSpec(
    name="gemv", template="gemv.jinja", doc="y = x @ W.T, W decoded in registers, f32 accumulation",
    context=_context, grid=_grid, outputs=(Output("y", "dtype", lambda s: s["M"] * s["N"]),),
    extra_variants=({"mmax": 1}, {"mmax": MAX_M}), name_params=("mmax",), reference=gemv_reference,
    accepts=decodes,
)  # fmt: skip
