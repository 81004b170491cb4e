"""OpSpec: one kernel family as data. Adding a kernel family is one spec plus one template.

A spec names its template, the formats it takes, how a render request becomes the template
context (with ONE list of Args that is both the C signature and the launch binding), its launch
grid, its outputs, and its reference (what `qkgen check` and the tests compare against).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ... import dtypes
from ...errors import QKGenValueError
from ...formats import Format, family_of, rows
from ..dialects import Dialect
from ..source import Arg
from ..target import Target

MAX_M = 8  # GEMV: activation rows one launch takes
LOCAL_BYTES = 48 << 10  # static local memory a CUDA block (and NVIDIA's OpenCL work-group) may declare
# Backends whose integer-dot and mma GEMVs load 2-byte aligned code runs (q4_0, q5_0, q8_0 blocks) as
# shifted 4-byte words rather than 16-bit pairs (the word_loads knob). Sweep 11 (H200, 4096 x 14336,
# f16 x, kernel alone, cold; docs/bench/2026-11-25-h200-mma.md): int8dot M = 1 q4_0 12.7 -> 11.3 us,
# q8_0 20.9 -> 18.8, q5_0 13.6 -> 13.9; mma M = 8 q4_0 34.0 -> 27.9, q5_0 46.0 -> 33.8, q8_0 55.8 ->
# 40.4. The float GEMV was slower with them (q4_0 18.0 -> 20.2 us), so it keeps 16-bit pairs. NVIDIA's
# OpenCL (a target with inline PTX: NVIDIA hardware) takes them too: H200 run 93 (oclprobe.py, int8dot
# M = 1, f16 x, kernel alone, hot) q4_0 17.2 -> 15.2 us, q8_0 28.7 -> 21.9, q6_k 33.7 -> 23.8, q5_0
# 17.9 -> 16.1, q4_1 14.2 -> 13.8, q4_k 16.1 -> 16.2.
WORD_LOADS = frozenset({"cuda"})


def default_word_loads(target) -> bool:
    """The word_loads knob's default on this target: CUDA, and OpenCL with inline PTX (NVIDIA's)."""
    return target.backend in WORD_LOADS or target.inline_ptx


@dataclass(frozen=True)
class Request:
    """What render() was asked for, validated: the op's context builder reads it."""

    fmt: Format
    target: Target
    d: Dialect
    dtype: str
    blocksize: int
    nested: bool
    scale_mode: str | None
    params: dict  # op parameters the caller set (popped as they are read; leftovers are an error)
    read: set = field(default_factory=set)  # the parameters the op read: what an error names as allowed

    def pop_int(self, name: str, default: int, lo: int, hi: int) -> int:
        self.read.add(name)
        v = self.params.pop(name, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise QKGenValueError(f"{name}: {v!r}; allowed: an int in {lo}..{hi}")
        return v

    def pop_bool(self, name: str, default: bool) -> bool:
        self.read.add(name)
        v = self.params.pop(name, default)
        if not isinstance(v, bool):
            raise QKGenValueError(f"{name}: {v!r}; allowed: True or False")
        return v

    def pop_choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        self.read.add(name)
        v = self.params.pop(name, default)
        if v not in allowed:
            raise QKGenValueError(f"{name}: {v!r}; allowed: {', '.join(allowed)}")
        return v

    def pop_min_groups(self) -> int:
        """Work-groups a compute unit should hold at once: a register budget (0: the compiler's own)."""
        return self.pop_int("min_groups", 0, 0, 32)

    def pop_wg(self, default: int, multiple: int) -> int:
        wg = self.pop_int("wg", default, 1, 1024)
        if wg % multiple or wg & (wg - 1):
            raise QKGenValueError(f"wg: {wg}; allowed: a power of two, a multiple of {multiple}")
        return wg


@dataclass(frozen=True)
class Output:
    """An output buffer the runtime allocates: the Arg it binds, its dtype (a dtypes.py name, or
    "dtype" for the kernel's dtype parameter) and its element count from the launch sizes. zero:
    allocated as zero bytes (flags a kernel only ever sets), never poisoned."""

    arg: str
    dtype: str
    count: Callable[[dict], int]
    zero: bool = False


@dataclass(frozen=True)
class OpSpec:
    name: str
    template: str
    doc: str
    context: Callable[[Request], dict]  # template context; must hold "args" and "wg"
    grid: Callable[[Any, dict], tuple[tuple[int, ...], tuple[int, ...]]]  # (ks, sizes) -> (global, local)
    outputs: tuple[Output, ...]
    accepts: Callable[[Format], bool] = lambda fmt: True
    dtypes: tuple[str, ...] = dtypes.FLOAT_DTYPES
    # op parameters the catalog also enumerates (e.g. mmax); an entry naming a dtype is for that dtype only
    extra_variants: tuple[dict, ...] = ({},)
    name_params: tuple[str, ...] = ()  # parameters always named in the kernel name (with their value)
    dims: int = 1
    reference: Callable[..., Any] | None = None  # numpy oracle: (qt or x, ...) -> expected output
    notes: dict = field(default_factory=dict)
    # The op reads no format row (exact_sum): render() takes format None or any row and ignores
    # it; the kernel name and header name no format; the catalog lists its kernels once.
    format_free: bool = False
    # Where the op sits in a call's chain of launches, for programmatic dependent launch
    # (target.grid_dependency): "reads_prior" (it reads what the launch before it wrote: x's copy),
    # "feeds_next" (the launch after it reads its output), "" neither. A context may return its own
    # "grid_role" (gemv_mma reads a prior launch's output only in its x_rounded form).
    grid_role: str = ""

    def formats(self) -> tuple[str, ...]:
        return tuple(f.name for f in rows() if self.accepts(f))

    def check_format(self, fmt: Format) -> None:
        if self.format_free:
            return
        if not self.accepts(fmt):
            raise QKGenValueError(f"format: {self.name} does not take {fmt.name}; allowed: {', '.join(self.formats())}")

    def variants(self, fmt: Format) -> Iterator[dict]:
        """render() keyword arguments of every kernel of this op for fmt (format excluded)."""
        for var in family_of(fmt).variants(fmt) if self.takes_variants else ({},):
            for dtype in self.dtypes:
                for extra in self.extra_variants:
                    if extra.get("dtype", dtype) == dtype:  # an extra naming a dtype is that dtype's alone
                        yield {"dtype": dtype, **var, **extra}

    @property
    def takes_variants(self) -> bool:
        return self.notes.get("variants", True) and not self.format_free


def one_scale_per_block(fmt: Format) -> bool:
    """Rows the decode templates handle: statistics in separate arrays, or inline blocks led by an
    f16 d (and an f16 m) with one scale per block and codes in qs, as GGUF's legacy blocks. Rows
    with sub-block scales (K-quants) or other scale encodings need their own decode first."""
    if not fmt.inline:
        return True
    d_ok = fmt.has_field("d") and fmt.member("d").ctype == "f16" and fmt.offsets["d"] == 0
    m_ok = fmt.scale != "d_m" or (fmt.has_field("m") and fmt.member("m").ctype == "f16")
    return d_ok and m_ok and fmt.has_field("qs") and fmt.scale in ("d", "d_m") and fmt.block == 32


def low_pow2(x: int) -> int:
    return x & -x


def load_align(fmt: Format, field_name: str, nbytes: int) -> int:
    """The widest alignment (<= 16) every load of `nbytes` at inline field `field_name` of a block has."""
    return math.gcd(fmt.block_align, fmt.offsets[field_name], low_pow2(nbytes), 16)


def weight_args(req: Request) -> list[Arg]:
    """The Args a quantized weight contributes (its family says which), in signature order."""
    fam = family_of(req.fmt)
    rename = {"data": "blocks" if req.fmt.inline else "codes"}  # the C names the templates use
    out = []
    for name, kind, dt in fam.weight_inputs(req.fmt, req.nested, req.scale_mode):
        out.append(Arg(rename.get(name, name), kind, dt, bind=name))
    return out


def table_locals(req: Request) -> tuple[dict, list[Arg]]:
    """Constant tables (name -> values) and the local arrays they are copied into."""
    tables, local_arrays = {}, []
    if req.fmt.code == "table":
        tables["TABLE"] = req.fmt.table
        local_arrays.append(Arg("lut", "local", "f32", count=len(req.fmt.table)))
    if req.nested:
        tables["TABLE2"] = req.fmt.nested_table
        local_arrays.append(Arg("lut2", "local", "f32", count=len(req.fmt.nested_table)))
    return tables, local_arrays


def grid_1d(items: int, wg: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A 1-D launch of `items` work-items in groups of wg."""
    return (-(-items // wg) * wg,), (wg,)


def team_row0(group: str, groups: int, team: int, rpw: int) -> str:
    """C of a GEMV team's first row: `groups` teams of `team` lanes per work-group, `rpw` rows each."""
    base = group if groups == 1 else f"{group} * {groups}u + lid / {team}u"
    if rpw == 1:
        return base
    return f"{group} * {rpw}u" if groups == 1 else f"({base}) * {rpw}u"


def part_index(rpw: int, mmax: int):
    """C of the flat index [group][r][m] into the slices' partial sums, for lane group `g` (the
    GEMV teams' slices)."""

    def at(g: str) -> str:
        idx = f"({g}) * {rpw}u + r" if rpw > 1 else f"{g} + r"
        return f"({idx}) * {mmax}u + m" if mmax > 1 else f"{idx} + m"

    return at


def lanes_of(t: Target) -> int:
    """Lanes that reduce one row: the sub-group where there is one, else a 32-wide local tree."""
    return t.subgroup_size or 32
