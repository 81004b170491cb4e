"""`qkgen bench`: time generated kernels with device events, next to bitsandbytes and the copy ceiling.

Measurement rules (every number in the output comes from a run made by this command):

  * Each launch is timed with device events (``Device.time_ms``; torch CUDA events for the
    bitsandbytes rows); the reported time is the median of ``--iters`` timed launches, after
    every input set has run once (first touch) and ``--warmup`` further launches.
  * Launches rotate over enough distinct input/output sets that the L2 cache cannot hold them:
    ceil(4 * L2 / bytes_per_set) + 1 sets, at least 2 (``rotation_sets``), L2 = the larger of
    ``--l2-mb`` (default 50 MB, the H100/H200 figure) and what the device reports, and at most
    ``--max-mem-gb`` of sets (the row says when that cap bound).
  * Bandwidth counts the bytes the op must move: each input read once, the output written once
    (dequantize: packed codes + statistics + n * sizeof(dtype); gemv: packed codes + statistics +
    x M * K * sizeof + y M * N * sizeof, dense torch rows W N * K * sizeof + x + y); the formula is
    printed per row.
  * The copy ceiling is a device-to-device copy measured in the same run on the same device
    (bytes read + bytes written); "% copy" is a row's GB/s over it.

Bench cases are a small registry (``CASES``): an op name maps to a ``BenchOp`` that lists the
cases a selection asks for (``specs``) and, for one case, makes the ``Case``: its byte count and
formula and one ``Impl`` per implementation (qkgen, then baselines such as bitsandbytes). An
Impl allocates one input/output set at a time (``make_set``) and returns a ``TimedSet`` whose
``run()`` launches once and returns device milliseconds. The harness (``measure``) does the
rotation, the warm-up and the median, so an op never times anything itself.

Adding GEMV (or any op) is one class and one line::

    class GemvBench(BenchOp):
        name = "gemv"
        formula = "packed codes + statistics + x (K * sizeof) + y (M * sizeof)"
        def specs(self, sel): ...              # usually: default_specs(self.name, sel)
        def prepare(self, ctx, spec): ...      # ctx.host_qtensor(spec) gives the quantized
                                               # weights; return Case(..., impls=[...])
    register(GemvBench())                      # CASES["gemv"]; `--op gemv` then works

``DequantizeBench`` below is the worked example; the compile-time measurement and the output
writers work from ``Spec.render_kwargs`` and ``Row`` and need nothing per op. ``GemvBench``
(``--op gemv``) uses the optional parts: per-op default shapes/formats, ``skipped()``, an Impl's
own ``bytes``/``formula`` (dense torch), ``path`` and ``check`` (output -> relative error vs a
reference; over ``CHECK_REL_TOL`` the row is an error with no time), ``Case.extra_kernels`` (more
kernels for compile timing) and ``markdown_table()`` (one table line per row instead of per case).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import api
from . import formats as F
from .dialects import DTYPES
from .errors import QKGenError, QKGenValueError
from .version import __version__

L2_DEFAULT_MB = 50.0  # H100 / H200 L2 (the H200 reports 60 MB; the device's own figure wins if larger)
L2_FACTOR = 4  # the sets together must exceed this many L2s
DEFAULT_SHAPES = "4096x4096,8192x8192,4096x14336"
DEFAULT_FORMATS = "nf4:nested,fp4:nested,blockwise8,q4_0,q8_0,int4:row"
DEFAULT_DTYPES = "bf16,f16"
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}
BNB4_BLOCKSIZE, BNB8_BLOCKSIZE, INT_GROUP = 64, 256, 64
GEMV_DEFAULT_SHAPES = "4096x4096,8192x8192,14336x4096,4096x14336"  # N x K
GEMV_DEFAULT_FORMATS = "nf4:nested,nf4:plain,fp4:nested,q4_0,q4_1,q5_0,q8_0,int4:row,blockwise8"
CHECK_REL_TOL = 1e-2  # gemv rows: relative error vs the float64 reference, else the row is an error
CHECK_ROWS = 256  # output rows the gemv check compares (evenly spaced, first and last included)


# --------------------------------------------------------------------------------------------
# Rotation


def rotation_sets(bytes_per_set: int, l2_bytes: float = L2_DEFAULT_MB * 1e6, max_bytes: float | None = None,
                  factor: int = L2_FACTOR) -> int:  # fmt: skip
    """Input/output sets to rotate over: ceil(factor * L2 / bytes_per_set) + 1, at least 2, and
    no more than fit in max_bytes (but never fewer than 2). Together they exceed factor * L2
    unless max_bytes forbids it (see ``covers_l2``)."""
    if bytes_per_set <= 0:
        raise QKGenValueError(f"bytes_per_set: {bytes_per_set}; allowed: a positive byte count")
    n = max(2, math.ceil(factor * l2_bytes / bytes_per_set) + 1)
    if max_bytes is not None:
        n = min(n, max(2, int(max_bytes // bytes_per_set)))
    return n


def covers_l2(sets: int, bytes_per_set: int, l2_bytes: float, factor: int = L2_FACTOR) -> bool:
    return sets * bytes_per_set > factor * l2_bytes


# --------------------------------------------------------------------------------------------
# Selection: shapes, formats, dtypes


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    shapes = []
    for tok in filter(None, (t.strip() for t in text.split(","))):
        try:
            shape = tuple(int(s) for s in tok.lower().split("x"))
        except ValueError:
            shape = ()
        if not shape or any(s <= 0 for s in shape):
            raise QKGenValueError(f"--shapes: {tok!r}; allowed: sizes like 4096x4096, comma-separated")
        shapes.append(shape)
    if not shapes:
        raise QKGenValueError("--shapes: empty; allowed: e.g. 4096x4096,1024x1024")
    return shapes


@dataclass(frozen=True)
class FormatSel:
    """One format and statistics layout: what quantize() and render() are told."""

    name: str
    nested: bool = False
    blocksize: int | None = None  # bnb blocksize, int group size (group mode only)
    scale_mode: str | None = None

    @property
    def fmt(self) -> F.Format:
        return F.get(self.name)

    @property
    def label(self) -> str:
        fam = self.fmt.family
        if fam in ("bnb4", "bnb8"):
            return ("nested " if self.nested else "") + f"bs{self.blocksize}"
        if fam == "int":
            return self.scale_mode + (f" g{self.blocksize}" if self.scale_mode == "group" else "")
        return "-"

    def quantize_kwargs(self) -> dict:
        fam = self.fmt.family
        if fam in ("bnb4", "bnb8"):
            return {"blocksize": self.blocksize, "nested": self.nested}
        if fam == "int":
            return {"scale_mode": self.scale_mode, "group_size": self.blocksize}
        return {}


def parse_formats(text: str) -> list[FormatSel]:
    """NAME[:VARIANT][@SIZE], comma-separated. VARIANT: nested|plain for nf4/fp4 (default nested),
    tensor|row|group for int formats (default row); SIZE: bnb blocksize or int group size."""
    out: list[FormatSel] = []
    for tok in filter(None, (t.strip() for t in text.split(","))):
        body, _, size_s = tok.partition("@")
        name, _, var = body.partition(":")
        fmt = F.get(name)  # FormatError (a ValueError) lists the names
        size = None
        if size_s:
            if not size_s.isdigit():
                raise QKGenValueError(f"--formats: {tok!r}: size {size_s!r} is not an integer")
            size = F.check_blocksize(fmt, int(size_s))
        if fmt.family == "bnb4":
            if var not in ("", "nested", "plain"):
                raise QKGenValueError(f"--formats: {tok!r}; allowed variants for {name}: nested, plain")
            out.append(FormatSel(name, nested=var != "plain", blocksize=size or BNB4_BLOCKSIZE))
        elif fmt.family == "bnb8":
            if var not in ("", "plain"):
                raise QKGenValueError(f"--formats: {tok!r}; {name} has no variants")
            out.append(FormatSel(name, blocksize=size or BNB8_BLOCKSIZE))
        elif fmt.family == "int":
            mode = var or "row"
            if mode not in fmt.scale_modes:
                raise QKGenValueError(f"--formats: {tok!r}; allowed variants for {name}: "
                                      f"{', '.join(fmt.scale_modes)}")  # fmt: skip
            if size and mode != "group":
                raise QKGenValueError(f"--formats: {tok!r}; a group size needs the group variant")
            group = (size or INT_GROUP) if mode == "group" else None
            out.append(FormatSel(name, scale_mode=mode, blocksize=group))
        else:
            if var or size:
                raise QKGenValueError(f"--formats: {tok!r}; {name} has no variants or sizes")
            out.append(FormatSel(name))
    if not out:
        raise QKGenValueError("--formats: empty")
    return out


def parse_dtypes(text: str) -> list[str]:
    out = [api.dtype_name(t.strip()) for t in text.split(",") if t.strip()]
    if not out:
        raise QKGenValueError(f"--dtypes: empty; allowed: {', '.join(DTYPES)}")
    return out


@dataclass(frozen=True)
class Spec:
    """One bench case before anything is allocated."""

    op: str
    sel: FormatSel
    dtype: str
    shape: tuple[int, ...]
    m: int | None = None  # gemv: rows of x

    @property
    def shape_str(self) -> str:
        return "x".join(map(str, self.shape))

    def render_kwargs(self, qt=None) -> dict:
        """render() keywords of the qkgen kernel (used to time compiles in a fresh process)."""
        return {"op": self.op, "format": self.sel.name, "dtype": self.dtype,
                "blocksize": qt.blocksize if qt is not None else self.sel.blocksize,
                "nested": self.sel.nested, "scale_mode": self.sel.scale_mode}  # fmt: skip


def default_specs(op: str, sel: argparse.Namespace) -> list[Spec]:
    """Every format x shape x dtype of the selection, dtype innermost (quantized data is reused)."""
    specs = []
    for fs in sel.formats:
        for shape in sel.shapes:
            n = math.prod(shape)
            if fs.fmt.inline and n % fs.fmt.block:
                continue  # GGUF needs whole blocks; reported in skipped
            for dtype in sel.dtypes:
                specs.append(Spec(op, fs, dtype, shape))
    return specs


# --------------------------------------------------------------------------------------------
# Registry


@dataclass
class TimedSet:
    """One allocated input/output set: run() launches once and returns device milliseconds."""

    run: Callable[[], float]
    output: Callable[[], np.ndarray] | None = None  # host f32 copy of the result (checks)
    keep: Any = None  # whatever must stay alive while the set is used


@dataclass
class Impl:
    impl: str  # "qkgen", "bnb", ...
    make_set: Callable[[], TimedSet]
    kernel: str = ""  # kernel or function name, for the report
    note: str = ""
    path: str = ""  # gemv: the qkgen path ("float", "int8dot")
    bytes: int | None = None  # bytes one launch moves when they differ from the case's (dense torch)
    formula: str = ""  # ... and their formula
    check: Callable[[np.ndarray], float] | None = None  # output -> relative error vs a reference


@dataclass
class Case:
    spec: Spec
    bytes: int  # bytes one launch must move
    formula: str  # how `bytes` is counted, with the numbers
    impls: list[Impl]
    render_kwargs: dict | None = None  # the qkgen kernel, for compile timing
    kernel_sha: str = ""  # its source hash: the compile-time processes must render the same source
    extra_kernels: list[dict] = field(default_factory=list)  # more kernels (render kwargs + "sha")


class BenchOp:
    """A benchmarked op: subclass, set name/formula, implement specs() and prepare(), register()."""

    name = ""
    formula = ""  # the op's byte formula in words, printed in the report header
    default_shapes = DEFAULT_SHAPES  # --shapes / --formats when not given
    default_formats = DEFAULT_FORMATS

    def specs(self, sel: argparse.Namespace) -> list[Spec]:
        return default_specs(self.name, sel)

    def skipped(self, sel: argparse.Namespace) -> list[str]:
        """Format x shape pairs the selection names but specs() leaves out, with the reason."""
        return [f"{fs.name} {fs.label} {'x'.join(map(str, s))}: {math.prod(s)} elements is not a multiple of "
                f"{fs.fmt.block}" for fs in sel.formats for s in sel.shapes
                if fs.fmt.inline and math.prod(s) % fs.fmt.block]  # fmt: skip

    def markdown_table(self, rows: list[dict]) -> tuple[list[str], list[str]] | None:
        """(table lines, error lines) for the report, or None for the default table (one line per
        case, one column group per implementation)."""
        return None

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        raise NotImplementedError


CASES: dict[str, BenchOp] = {}


def register(op: BenchOp) -> BenchOp:
    CASES[op.name] = op
    return op


# --------------------------------------------------------------------------------------------
# Context: the device, torch / bitsandbytes when present, quantized host data


class Context:
    def __init__(self, dev, args: argparse.Namespace):
        self.dev = dev
        self.args = args
        self.notes: list[str] = []
        self._qt_key: tuple | None = None
        self._qt = None
        self._derived: dict = {}
        self.torch = None
        self.torch_device = None
        self.bnb = None
        if dev.backend == "cuda":
            self._init_torch()

    def _init_torch(self) -> None:
        try:
            import torch
        except ImportError:
            self.notes.append("torch is not installed: no torch copy ceiling, no bitsandbytes rows")
            return
        if not torch.cuda.is_available():
            self.notes.append("torch has no CUDA device: no bitsandbytes rows")
            return
        idx = self.dev.info.index
        if idx >= torch.cuda.device_count():
            self.notes.append(f"torch sees {torch.cuda.device_count()} CUDA device(s), not index {idx}")
            return
        tname = torch.cuda.get_device_name(idx)
        if tname.strip() != self.dev.info.name.strip():
            self.notes.append(f"torch's cuda:{idx} is {tname!r}, qkgen's device is {self.dev.info.name!r}")
        torch.cuda.set_device(idx)
        self.torch, self.torch_device = torch, torch.device("cuda", idx)
        if not self.args.no_bnb:
            try:
                import bitsandbytes.functional as bnbf

                self.bnb = bnbf
            except Exception as e:  # bnb prints and raises all sorts on a broken install
                self.notes.append(f"bitsandbytes unusable: {type(e).__name__}: {e}")

    def host_qtensor(self, spec: Spec):
        """The spec's data quantized on the host by the reference codec (bit-exact with
        bitsandbytes / gguf); reused while consecutive specs share format and shape."""
        key = (spec.sel, spec.shape)
        if key != self._qt_key:
            self._qt = self._qt_key = None
            self._derived = {}
            gc.collect()
            rng = np.random.default_rng([self.args.seed, *spec.shape])
            x = rng.standard_normal(spec.shape, dtype=np.float32)
            self._qt = api.quantize(x, spec.sel.name, **spec.sel.quantize_kwargs())
            self._qt_key = key
        return self._qt

    def note_once(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def derived(self, spec: Spec, name: str, make: Callable[[Any], Any]) -> Any:
        """make(qtensor) for the spec's host qtensor (e.g. its dequantized weights), cached as
        long as the qtensor is."""
        qt = self.host_qtensor(spec)
        if name not in self._derived:
            self._derived[name] = make(qt)
        return self._derived[name]


# --------------------------------------------------------------------------------------------
# Dequantize


def weight_bytes(qt) -> tuple[int, str]:
    """(bytes of qt's packed codes and statistics, the formula with its numbers)."""
    fmt, n, nb = qt.format, qt.n, qt.nblocks
    if fmt.inline:
        codes = f"blocks {nb}*{fmt.block_bytes} B (codes and scales inline)"
    else:
        codes = f"codes ceil({n}*{fmt.low_bits}/8) B"
    stats = qt.stats_bytes()
    if qt.nested:
        n2 = -(-nb // fmt.nested_block)
        st = f" + absmax_q {nb}*1 B + absmax2 {n2}*4 B + offset 4 B"
    elif qt.absmax is not None:
        st = f" + absmax {nb}*4 B"
    elif qt.scale is not None:
        st = f" + scale {stats // 4}*4 B"
    else:
        st = ""
    return qt.data_bytes + stats, f"{codes}{st}"


def dequantize_bytes(qt, dtype: str) -> tuple[int, str]:
    """(bytes one dequantize launch moves, the formula with its numbers)."""
    n, size = qt.n, DTYPE_BYTES[dtype]
    wbytes, wformula = weight_bytes(qt)
    total = wbytes + n * size
    return total, f"{wformula} + out {n}*{size} B = {total} B"


def _bnb_state(bnbf, torch, qt, dtype: str, device):
    """bitsandbytes' QuantState for qt on `device`, output dtype `dtype` (fresh tensors)."""
    QuantState = bnbf.QuantState
    fmt = qt.format
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device, copy=True)  # noqa: E731
    tdt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype]
    kw: dict[str, Any] = dict(code=torch.tensor(fmt.table, dtype=torch.float32, device=device),
                              blocksize=qt.blocksize, dtype=tdt)  # fmt: skip
    if fmt.family == "bnb4":
        kw.update(shape=torch.Size(qt.shape), quant_type=fmt.name)
    if qt.nested:
        code2 = torch.tensor(fmt.nested_table, dtype=torch.float32, device=device)
        state2 = QuantState(absmax=t(qt.absmax2), blocksize=fmt.nested_block, dtype=torch.float32, code=code2)
        kw.update(absmax=t(qt.absmax_q), state2=state2,
                  offset=torch.tensor(qt.offset, dtype=torch.float32, device=device))  # fmt: skip
    else:
        kw.update(absmax=t(qt.absmax))
    return QuantState(**kw)


def bnb_dequantize_fn(bnbf, torch, qt, dtype: str, device) -> tuple[Callable[[], Any], Any]:
    """(call, keep-alive) running bitsandbytes' dequantize of qt's data on `device`: bnb4 through
    dequantize_4bit, blockwise8 through dequantize_blockwise, into a preallocated output where the
    device has bnb's `out=` kernel. call() returns the output tensor."""
    fam = qt.format.family
    if fam not in ("bnb4", "bnb8"):
        raise QKGenValueError(f"format: {qt.format.name} has no bitsandbytes kernel")
    state = _bnb_state(bnbf, torch, qt, dtype, device)
    packed = torch.from_numpy(np.ascontiguousarray(qt.data)).to(device, copy=True)
    packed = packed.reshape(-1, 1) if fam == "bnb4" else packed.reshape(qt.shape)
    fn = bnbf.dequantize_4bit if fam == "bnb4" else bnbf.dequantize_blockwise
    out = torch.empty(qt.shape, dtype=state.dtype, device=device)
    mode = {"out": True}

    def call():
        if mode["out"]:
            try:
                return fn(packed, state, out=out)
            except NotImplementedError:  # e.g. bnb's CPU backend has no `.out` kernel
                mode["out"] = False
        return fn(packed, state)

    return call, (state, packed, out)


def _torch_event_timer(torch, fn: Callable[[], Any]) -> Callable[[], float]:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run() -> float:
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    return run


def _to_f32(host: np.ndarray, dtype: str) -> np.ndarray:
    from .reference import bf16_to_f32

    return bf16_to_f32(host) if dtype == "bf16" else np.asarray(host, dtype=np.float32)


class DequantizeBench(BenchOp):
    name = "dequantize"
    formula = "packed codes + statistics + n * sizeof(dtype) (inputs read once, output written once)"

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        dev = ctx.dev
        qt = ctx.host_qtensor(spec)
        nbytes, formula = dequantize_bytes(qt, spec.dtype)
        _, ks, kernel = api.prepare_dequantize(qt, spec.dtype, dev.backend, ctx.args.device)

        def qkgen_set() -> TimedSet:
            out_buf, out = dev.empty(qt.n, spec.dtype)
            # numpy inputs: launch_dequantize uploads fresh device buffers, i.e. a new set
            args, gsize, lsize = api.launch_dequantize(dev, ks, qt, out_buf)
            return TimedSet(
                run=lambda: dev.time_ms(kernel, args, gsize, lsize),
                output=lambda: _to_f32(np.asarray(dev.download(out, spec.dtype, qt.n)), spec.dtype),
                keep=(args, out_buf, out),
            )  # fmt: skip

        impls = [Impl("qkgen", qkgen_set, kernel=ks.name)]
        if ctx.bnb is not None and qt.format.family in ("bnb4", "bnb8"):
            torch, bnbf, tdev = ctx.torch, ctx.bnb, ctx.torch_device
            fname = "dequantize_4bit" if qt.format.family == "bnb4" else "dequantize_blockwise"

            def bnb_set() -> TimedSet:
                call, keep = bnb_dequantize_fn(bnbf, torch, qt, spec.dtype, tdev)
                box = {}

                def fn():
                    box["out"] = call()

                def output():
                    return box["out"].float().reshape(-1).cpu().numpy()

                return TimedSet(run=_torch_event_timer(torch, fn), output=output, keep=keep)

            note = "nested: bnb dequantizes absmax in a separate kernel first" if qt.nested else ""
            impls.append(Impl("bnb", bnb_set, kernel=f"bitsandbytes.functional.{fname}", note=note))
        return Case(spec, nbytes, formula, impls, render_kwargs=spec.render_kwargs(qt), kernel_sha=ks.sha)


register(DequantizeBench())


# --------------------------------------------------------------------------------------------
# GEMV: y = x @ W.T, W [N, K] quantized, x [M, K]


def gemv_bytes(qt, m: int, dtype: str) -> tuple[int, str]:
    """(bytes one y = x @ W.T launch moves, the formula with its numbers): W's packed codes and
    statistics + x (M * K * sizeof) + y (M * N * sizeof), each read or written once."""
    n_out, k = qt.shape
    size = DTYPE_BYTES[dtype]
    wbytes, wformula = weight_bytes(qt)
    total = wbytes + m * k * size + m * n_out * size
    return total, f"{wformula} + x {m}*{k}*{size} B + y {m}*{n_out}*{size} B = {total} B"


def dense_gemv_bytes(n_out: int, k: int, m: int, dtype: str) -> tuple[int, str]:
    """(bytes, formula) of the dense product: W N * K * sizeof + x + y."""
    size = DTYPE_BYTES[dtype]
    total = n_out * k * size + m * k * size + m * n_out * size
    return total, (f"dense W {n_out}*{k}*{size} B + x {m}*{k}*{size} B + y {m}*{n_out}*{size} B "
                   f"= {total} B")  # fmt: skip


def gemv_x(seed: int, n_out: int, k: int, m: int, dtype: str) -> np.ndarray:
    """The activations x [M, K] as the kernels take them on the host (bf16: uint16 bits)."""
    from .reference import round_to

    x = np.random.default_rng([seed, n_out, k, m, 1]).standard_normal((m, k), dtype=np.float32)
    return np.ascontiguousarray(round_to(x, dtype) if dtype != "f32" else x)


def gemv_checker(x_host: np.ndarray, w: np.ndarray, dtype: str, rows: int = CHECK_ROWS):
    """check(y_flat) -> ||y - ref|| / ||ref|| on up to `rows` evenly spaced output rows (first and
    last included), ref the float64 product of x (as the kernel sees it) and the dequantized W."""
    n_out = w.shape[0]
    idx = np.unique(np.linspace(0, n_out - 1, min(n_out, rows)).round().astype(np.int64))
    xf = _to_f32(x_host, dtype).astype(np.float64)
    ref = xf @ w[idx].astype(np.float64).T  # [M, len(idx)]
    norm = float(np.linalg.norm(ref)) or 1.0

    def check(y_flat: np.ndarray) -> float:
        got = np.asarray(y_flat, dtype=np.float64).reshape(xf.shape[0], n_out)[:, idx]
        if not np.all(np.isfinite(got)):
            return math.inf
        return float(np.linalg.norm(got - ref)) / norm

    return check


def _torch_dtype(torch, dtype: str):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype]


def bnb_gemv_fn(bnb, bnbf, torch, qt, x_host: np.ndarray, dtype: str, device,
                fn: str = "matmul_4bit") -> tuple[Callable[[], Any], Any]:  # fmt: skip
    """(call, keep-alive) running bitsandbytes' 4-bit product y = x @ W.T on `device` from fresh
    device copies of qt (packed [(N*K+1)//2, 1] codes and its QuantState) and x [M, K]:

      fn "matmul_4bit": bitsandbytes.matmul_4bit(x, W.t(), quant_state=state), the public call
        (bnb 0.50: torch.ops.bitsandbytes.gemm_4bit, which for M <= 4 runs the fused cgemm_4bit
        kernel, nested absmax decoded inside it);
      fn "gemv_4bit": bitsandbytes.functional.gemv_4bit(x, W, state=state), the M = 1 kernel
        (cgemm_4bit_inference_naive; nested absmax first dequantized by a separate kernel).

    call() returns y [M, N] in x's dtype."""
    if qt.format.family != "bnb4":
        raise QKGenValueError(f"format: {qt.format.name} has no bitsandbytes 4-bit product")
    state = _bnb_state(bnbf, torch, qt, dtype, device)
    packed = torch.from_numpy(np.ascontiguousarray(qt.data)).to(device, copy=True).reshape(-1, 1)
    x = torch.from_numpy(_to_f32(x_host, dtype)).to(device=device, dtype=_torch_dtype(torch, dtype))
    if fn == "matmul_4bit":
        call = lambda: bnb.matmul_4bit(x, packed.t(), quant_state=state)  # noqa: E731
    elif fn == "gemv_4bit":
        if x.shape[0] != 1:
            raise QKGenValueError(f"gemv_4bit: M = {x.shape[0]}; it computes one row (M = 1)")
        call = lambda: bnbf.gemv_4bit(x, packed, state=state)  # noqa: E731
    else:
        raise QKGenValueError(f"fn: {fn!r}; allowed: matmul_4bit, gemv_4bit")
    return call, (state, packed, x)


def _render_module():
    import importlib

    return importlib.import_module(".render", __package__)


def int8dot_formats() -> tuple[str, ...]:
    """Weight formats of qkgen's int8dot GEMV path; empty where this build has no such path."""
    rm = _render_module()
    if not {"quantize_q8_1", "gemv_int8dot"} <= set(rm.ops()):
        return ()
    return tuple(getattr(rm, "INT8DOT_FORMATS", ()))


class GemvBench(BenchOp):
    """y = x @ W.T, W [N, K] quantized (--shapes NxK), x [M, K] (--m), all in the case dtype.

    Rows per case: qkgen's float path (impl "qkgen", path "float"), qkgen's int8dot path for the
    GGUF formats that have one (impl "qkgen int8dot", path "int8dot"; its time is the sum of the
    quantize_q8_1 and gemv_int8dot launches, each timed with device events), and on CUDA with torch:
    bitsandbytes' 4-bit product for nf4/fp4 ("bnb": matmul_4bit; "bnb gemv_4bit": functional.gemv_4bit,
    M = 1) and the dense product torch.matmul(x, Wd.t()) with Wd the dequantized W in the case dtype
    ("torch"). Every set is fresh device copies of W (codes, statistics or dense), x and y. Every
    row's output is checked against the float64 product on sampled rows (CHECK_ROWS); a row over
    CHECK_REL_TOL is an error and posts no time."""

    name = "gemv"
    formula = ("packed codes + statistics + x (M * K * sizeof) + y (M * N * sizeof) (inputs read once, "
               "output written once); dense torch rows: W N * K * sizeof + x + y")  # fmt: skip
    default_shapes = GEMV_DEFAULT_SHAPES
    default_formats = GEMV_DEFAULT_FORMATS

    @staticmethod
    def _why_skip(fs: FormatSel, shape: tuple[int, ...]) -> str:
        if len(shape) != 2:
            raise QKGenValueError(f"--shapes: {'x'.join(map(str, shape))}; gemv takes NxK (W [N, K])")
        if fs.fmt.inline and shape[1] % fs.fmt.block:
            return f"K = {shape[1]} is not a multiple of {fs.fmt.name}'s block of {fs.fmt.block}"
        return ""

    def specs(self, sel: argparse.Namespace) -> list[Spec]:
        m = getattr(sel, "m", 1)
        return [Spec(self.name, fs, dtype, shape, m=m) for fs in sel.formats for shape in sel.shapes
                if not self._why_skip(fs, shape) for dtype in sel.dtypes]  # fmt: skip

    def skipped(self, sel: argparse.Namespace) -> list[str]:
        return [f"{fs.name} {fs.label} {'x'.join(map(str, s))}: {why}"
                for fs in sel.formats for s in sel.shapes if (why := self._why_skip(fs, s))]  # fmt: skip

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        from .reference import dequantize

        dev, dtype, m = ctx.dev, spec.dtype, spec.m or 1
        n_out, k = spec.shape
        qt = ctx.host_qtensor(spec)
        nbytes, formula = gemv_bytes(qt, m, dtype)
        x = gemv_x(ctx.args.seed, n_out, k, m, dtype)
        w = ctx.derived(spec, "dequantized", dequantize)  # f32 [N, K], the values every impl multiplies
        check = gemv_checker(x, w, dtype)
        mmax = 1 if m == 1 else api.MAX_M
        # the render() keywords of the float-path kernel, for timing its compile in a fresh process
        rkw = spec.render_kwargs(qt) | {"mmax": mmax}
        op_, fmt_ = rkw.pop("op"), rkw.pop("format")
        try:
            _, ks, kernel, shape = api.prepare_gemv(qt, x, dev.backend, ctx.args.device)
        except QKGenValueError as e:
            raise QKGenValueError(f"--shapes: {e}") from None

        def y_output(y) -> Callable[[], np.ndarray]:
            return lambda: _to_f32(np.asarray(dev.download(y, dtype, m * n_out)), dtype)

        def float_set() -> TimedSet:
            y_buf, y = dev.empty(m * n_out, dtype)
            # numpy inputs: launch_gemv uploads fresh device buffers (W, statistics, x), i.e. a new set
            args, gsize, lsize = api.launch_gemv(dev, ks, qt, x, y_buf, shape)
            return TimedSet(run=lambda: dev.time_ms(kernel, args, gsize, lsize), output=y_output(y),
                            keep=(args, y_buf, y))  # fmt: skip

        impls = [Impl("qkgen", float_set, kernel=ks.name, path="float", check=check)]
        extra: list[dict] = []

        # qkgen, int8dot path: quantize_q8_1 (x -> q8_1 blocks) then gemv_int8dot, as int8dot.gemv_int8dot
        if qt.format.name in int8dot_formats() and k % F.get(_render_module().INT8DOT_ACT).block == 0:
            from . import int8dot

            act = F.get(_render_module().INT8DOT_ACT)
            ksq, kq, nblocks = int8dot.prepare_quantize(dev, m, k, dtype)
            ksg, kg = int8dot.prepare_gemv_int8dot(dev, qt, m, dtype)
            xq_bytes = nblocks * act.block_bytes

            def int8dot_set() -> TimedSet:
                xq_buf, xq = dev.empty(xq_bytes // 2, "f16")  # q8_1 blocks in 2-byte elements, like int8dot
                y_buf, y = dev.empty(m * n_out, dtype)
                qargs, gq, lq = int8dot.launch_quantize(dev, ksq, x, xq_buf, nblocks)
                gargs, gg, lg = int8dot.launch_gemv_int8dot(dev, ksg, qt, xq_buf, y_buf, shape)

                def run() -> float:
                    return dev.time_ms(kq, qargs, gq, lq) + dev.time_ms(kg, gargs, gg, lg)

                return TimedSet(run=run, output=y_output(y), keep=(qargs, gargs, xq_buf, xq, y_buf, y))

            note = (f"time = quantize_q8_1 + gemv_int8dot launches; the q8_1 copy of x ({xq_bytes} B written "
                    "and read) is not counted")  # fmt: skip
            impls.append(Impl("qkgen int8dot", int8dot_set, kernel=f"{ksq.name} + {ksg.name}", path="int8dot",
                              note=note, check=check))  # fmt: skip
            for kk, src in ((dict(op="quantize_q8_1", format=act.name, dtype=dtype), ksq),
                            (dict(op="gemv_int8dot", format=qt.format.name, dtype=dtype, mmax=mmax), ksg)):
                extra.append({**kk, "sha": src.sha})
        elif qt.format.inline and not int8dot_formats():
            ctx.note_once("qkgen's int8dot path is not in this build (no quantize_q8_1 / gemv_int8dot "
                          "kernels): no int8dot rows")  # fmt: skip

        torch, tdev = ctx.torch, ctx.torch_device
        if dev.backend != "cuda":
            ctx.note_once("bitsandbytes and dense torch rows run on the CUDA backend only")
        if ctx.bnb is not None and qt.format.family == "bnb4":
            import bitsandbytes as bnb

            for fn, impl_name in (("matmul_4bit", "bnb"), ("gemv_4bit", "bnb gemv_4bit")):
                if fn == "gemv_4bit" and m != 1:
                    continue

                def bnb_set(fn=fn) -> TimedSet:
                    call, keep = bnb_gemv_fn(bnb, ctx.bnb, torch, qt, x, dtype, tdev, fn=fn)
                    box = {}

                    def run_fn():
                        box["y"] = call()

                    return TimedSet(run=_torch_event_timer(torch, run_fn), keep=keep,
                                    output=lambda: box["y"].float().reshape(-1).cpu().numpy())  # fmt: skip

                if fn == "matmul_4bit":
                    kname, note = "bitsandbytes.matmul_4bit(x, W.t(), quant_state=state)", ""
                else:
                    kname = "bitsandbytes.functional.gemv_4bit(x, W, state=state)"
                    note = "nested: bnb dequantizes absmax in a separate kernel first" if qt.nested else ""
                impls.append(Impl(impl_name, bnb_set, kernel=kname, note=note, check=check))
        if torch is not None:
            dbytes, dformula = dense_gemv_bytes(n_out, k, m, dtype)
            tdt = _torch_dtype(torch, dtype)
            base: dict[str, Any] = {}

            def torch_set() -> TimedSet:
                if "w" not in base:  # one upload per case, then device-to-device clones per set
                    base["w"] = torch.from_numpy(w).to(device=tdev, dtype=tdt)
                    base["x"] = torch.from_numpy(_to_f32(x, dtype)).to(device=tdev, dtype=tdt)
                wd, xt = base["w"].clone(), base["x"].clone()
                y = torch.empty((m, n_out), dtype=tdt, device=tdev)
                run = _torch_event_timer(torch, lambda: torch.matmul(xt, wd.t(), out=y))
                return TimedSet(run=run, output=lambda: y.float().reshape(-1).cpu().numpy(), keep=(wd, xt, y))

            impls.append(Impl("torch", torch_set, kernel=f"torch.matmul(x, Wd.t()) dense {dtype}",
                              note=f"Wd: the dequantized W, dense {dtype}", bytes=dbytes, formula=dformula,
                              check=check))  # fmt: skip
        return Case(spec, nbytes, formula, impls, render_kwargs={"op": op_, "format": fmt_, **rkw},
                    kernel_sha=ks.sha, extra_kernels=extra)  # fmt: skip

    def markdown_table(self, rows: list[dict]) -> tuple[list[str], list[str]]:
        head = ["format", "variant", "dtype", "N x K", "M", "impl", "path", "kernel", "MB moved", "sets",
                "µs", "GB/s", "% copy", "check (rel err)", "time / qkgen float"]  # fmt: skip
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        errors: list[str] = []
        qk = {(r["format"], r["variant"], r["dtype"], r["shape"]): r for r in rows
              if r["impl"] == "qkgen" and r["status"] == "ok"}  # fmt: skip
        for r in rows:
            key = (r["format"], r["variant"], r["dtype"], r["shape"])
            chk = "-" if r["rel_err"] is None else f"{r['check']} ({r['rel_err']:.2g})"
            if r["status"] == "ok":
                q = qk.get(key)
                sp = (f"{r['us_median'] / q['us_median']:.2f}x" if q is not None and r["impl"] != "qkgen"
                      else "-")  # fmt: skip
                nums = [_fmt(r["us_median"], ".1f"), _fmt(r["gbps"], ".1f"), _fmt(r["pct_copy"], ".1f"), chk,
                        sp]  # fmt: skip
            else:
                errors.append(f"{r['impl']} {r['format']} {r['variant']} {r['dtype']} {r['shape']}: "
                              f"{r['error']}")  # fmt: skip
                nums = ["error", "-", "-", chk, "-"]
            kernel = f"`{r['kernel']}`" if r["kernel"] else "-"
            cells = [*key[:4], "-" if r["m"] is None else str(r["m"]), r["impl"], r["path"] or "-", kernel, f"{r['bytes'] / 1e6:.2f}",
                     str(r["sets"] or "-"), *nums]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "time / qkgen float = the row's µs over the qkgen float row's µs (> 1: qkgen float "
                      f"is faster); check = ||y - y_ref|| / ||y_ref|| on up to {CHECK_ROWS} rows of y, y_ref "
                      f"the float64 product of x and the dequantized W; allowed < {CHECK_REL_TOL:g}."]
        return lines, errors


register(GemvBench())


# --------------------------------------------------------------------------------------------
# Measuring


@dataclass
class Row:
    op: str
    format: str
    variant: str
    dtype: str
    shape: str
    impl: str
    kernel: str = ""
    path: str = ""  # gemv qkgen rows: float | int8dot
    m: int | None = None  # gemv: rows of x
    status: str = "ok"  # ok | error
    error: str = ""
    us_median: float | None = None
    us_min: float | None = None
    us_max: float | None = None
    gbps: float | None = None
    pct_copy: float | None = None
    bytes: int = 0
    byte_formula: str = ""
    sets: int = 0
    set_bytes: int = 0
    covers_l2: bool = False
    iters: int = 0
    warmup: int = 0
    max_abs_diff_vs_qkgen: float | None = None
    bit_equal_to_qkgen: bool | None = None
    rel_err: float | None = None  # ||y - reference|| / ||reference|| (gemv: float64 product, sampled rows)
    check: str = ""  # "pass" | "FAIL" where the impl has a correctness check
    note: str = ""
    samples_us: list[float] = field(default_factory=list)


def measure(impl: Impl, bytes_per_set: int, iters: int, warmup: int, l2_bytes: float,
            max_bytes: float) -> tuple[list[float], int, TimedSet]:  # fmt: skip
    """Device times (µs) of `iters` launches rotating over fresh sets; returns (samples, sets, first set).
    Every set runs once untimed first (first touch, lazy allocation), then `warmup` launches."""
    nsets = rotation_sets(bytes_per_set, l2_bytes, max_bytes)
    sets = [impl.make_set() for _ in range(nsets)]
    for s in sets:
        s.run()
    for i in range(warmup):
        sets[i % nsets].run()
    samples = []
    for i in range(iters):
        ms = sets[(warmup + i) % nsets].run()
        if not (ms > 0 and math.isfinite(ms)):
            raise QKGenError(f"{impl.impl}: device timer returned {ms!r} ms")
        samples.append(ms * 1e3)
    first = sets[0]
    del sets[1:]
    return samples, nsets, first


def _bandwidth(nbytes: int, us: float, ceiling_gbps: float | None) -> tuple[float, float | None]:
    gbps = nbytes / (us * 1e-6) / 1e9
    return gbps, (100.0 * gbps / ceiling_gbps if ceiling_gbps else None)


def run_case(ctx: Context, case: Case, ceiling_gbps: float | None, l2_bytes: float) -> list[Row]:
    a, spec = ctx.args, case.spec
    rows: list[Row] = []
    ref_out = None
    for impl in case.impls:
        nbytes = impl.bytes or case.bytes
        row = Row(op=spec.op, format=spec.sel.name, variant=spec.sel.label, dtype=spec.dtype,
                  shape=spec.shape_str, impl=impl.impl, kernel=impl.kernel, path=impl.path, m=spec.m,
                  bytes=nbytes, byte_formula=impl.formula or case.formula, set_bytes=nbytes, iters=a.iters,
                  warmup=a.warmup, note=impl.note)  # fmt: skip
        try:
            cap = a.max_mem_gb * 2**30
            samples, nsets, first = measure(impl, nbytes, a.iters, a.warmup, l2_bytes, cap)
            med = statistics.median(samples)
            row.us_median, row.us_min, row.us_max = med, min(samples), max(samples)
            row.gbps, row.pct_copy = _bandwidth(nbytes, med, ceiling_gbps)
            row.sets, row.covers_l2 = nsets, covers_l2(nsets, nbytes, l2_bytes)
            row.samples_us = [round(s, 3) for s in samples]
            if not row.covers_l2:
                row.note = "; ".join(filter(None, [row.note, f"--max-mem-gb caps rotation at {nsets} sets "
                                                   f"(< {L2_FACTOR}x L2)"]))  # fmt: skip
            if first.output is not None and len(case.impls) > 1:
                got = first.output().reshape(-1)
                if impl.impl == "qkgen":
                    ref_out = got
                elif ref_out is not None:
                    diff = np.abs(got.astype(np.float64) - ref_out)
                    row.max_abs_diff_vs_qkgen = float(np.nanmax(diff)) if diff.size else 0.0
                    row.bit_equal_to_qkgen = bool(np.array_equal(got, ref_out, equal_nan=True))
            if impl.check is not None and first.output is not None:
                row.rel_err = float(impl.check(first.output().reshape(-1)))
                row.check = "pass" if row.rel_err < CHECK_REL_TOL else "FAIL"
                if row.check != "pass":  # a wrong result posts no number
                    row.status = "error"
                    row.error = (f"correctness check failed: relative error {row.rel_err:.3g} vs the "
                                 f"reference (allowed < {CHECK_REL_TOL:g})")  # fmt: skip
                    row.us_median = row.us_min = row.us_max = row.gbps = row.pct_copy = None
                    row.samples_us = []
            del first
        except QKGenError as e:
            row.status, row.error = "error", str(e).splitlines()[0]
        except Exception as e:  # an out-of-memory or a runtime error fails this row, not the run
            row.status, row.error = "error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        rows.append(row)
        gc.collect()
        if ctx.torch is not None:
            ctx.torch.cuda.empty_cache()
    return rows


# --------------------------------------------------------------------------------------------
# Copy ceiling


def _median_of(run: Callable[[], float], iters: int, warmup: int) -> float:
    for _ in range(warmup):
        run()
    return statistics.median(run() for _ in range(iters))


_CL_COPY = """
__kernel void qkgen_bench_copy(__global const uint4* restrict src, __global uint4* restrict dst, uint n) {
    uint i = get_global_id(0);
    if (i < n) dst[i] = src[i];
}
"""


def _opencl_ceiling(dev, nbytes: int, iters: int, warmup: int) -> dict:
    import pyopencl as cl

    d = dev.dev
    nbytes = int(min(nbytes, d.max_mem_alloc_size, d.global_mem_size // 4)) // 4096 * 4096
    mf = cl.mem_flags
    src = cl.Buffer(dev.ctx, mf.READ_WRITE, nbytes)
    dst = cl.Buffer(dev.ctx, mf.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(dev.queue, src, np.uint8(1), 0, nbytes)
    cl.enqueue_fill_buffer(dev.queue, dst, np.uint8(0), 0, nbytes)
    dev.queue.finish()

    def ev_ms(ev) -> float:
        ev.wait()
        return (ev.profile.end - ev.profile.start) * 1e-6

    methods = {}
    ms = _median_of(lambda: ev_ms(cl.enqueue_copy(dev.queue, dst, src, byte_count=nbytes)), iters, warmup)
    methods["enqueue_copy"] = 2 * nbytes / (ms * 1e-3) / 1e9
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        prg = cl.Program(dev.ctx, _CL_COPY).build(cache_dir=False)
    k = prg.qkgen_bench_copy
    k.set_scalar_arg_dtypes([None, None, np.uint32])
    n16, wg = nbytes // 16, 256
    gsize = -(-n16 // wg) * wg
    ms = _median_of(lambda: ev_ms(k(dev.queue, (gsize,), (wg,), src, dst, np.uint32(n16))), iters, warmup)
    methods["uint4 copy kernel"] = 2 * nbytes / (ms * 1e-3) / 1e9
    best = max(methods, key=methods.get)
    return {"gbps": methods[best], "method": f"OpenCL {best} (profiling events)", "buffer_bytes": nbytes,
            "all": methods}  # fmt: skip


def _torch_ceiling(torch, tdev, nbytes: int, iters: int, warmup: int) -> dict:
    src = torch.ones(nbytes, dtype=torch.uint8, device=tdev)
    dst = torch.empty_like(src)
    ms = _median_of(_torch_event_timer(torch, lambda: dst.copy_(src)), iters, warmup)
    del src, dst
    torch.cuda.empty_cache()
    gbps = 2 * nbytes / (ms * 1e-3) / 1e9
    return {"gbps": gbps, "method": "torch dst.copy_(src), CUDA events", "buffer_bytes": nbytes,
            "all": {"torch copy_": gbps}}  # fmt: skip


def _sycl_queue(dev):
    try:
        import dpctl
    except ImportError:
        return None
    for name in ("queue", "q", "_queue", "sycl_queue"):
        q = getattr(dev, name, None)
        if isinstance(q, dpctl.SyclQueue):
            return q
    return None


def _sycl_ceiling(dev, nbytes: int, iters: int, warmup: int) -> dict | None:
    q0 = _sycl_queue(dev)
    if q0 is None:
        return None
    import dpctl
    import dpctl.memory as dpmem

    q = q0 if q0.has_enable_profiling else dpctl.SyclQueue(q0.sycl_context, q0.sycl_device,
                                                          property="enable_profiling")  # fmt: skip
    sd = q.sycl_device
    nbytes = int(min(nbytes, sd.max_mem_alloc_size, sd.global_mem_size // 4)) // 4096 * 4096
    src, dst = dpmem.MemoryUSMDevice(nbytes, queue=q), dpmem.MemoryUSMDevice(nbytes, queue=q)
    q.memcpy(src, dst, nbytes)  # touch both

    def run() -> float:
        ev = q.memcpy_async(dst, src, nbytes)
        ev.wait()
        return (ev.profiling_info_end - ev.profiling_info_start) * 1e-6

    ms = _median_of(run, iters, warmup)
    gbps = 2 * nbytes / (ms * 1e-3) / 1e9
    return {"gbps": gbps, "method": "SYCL queue.memcpy (dpctl, profiling events)", "buffer_bytes": nbytes,
            "all": {"queue.memcpy": gbps}}  # fmt: skip


def copy_ceiling(ctx: Context) -> dict:
    """The device-to-device copy bandwidth of this device, measured now: {"gbps": ...} or
    {"gbps": None, "note": why}. Bytes read plus bytes written, median of --iters copies."""
    a, dev = ctx.args, ctx.dev
    nbytes = int(a.copy_mb * 2**20)
    try:
        if dev.backend == "opencl":
            return _opencl_ceiling(dev, nbytes, a.iters, a.warmup)
        if dev.backend == "cuda":
            if ctx.torch is None:
                return {"gbps": None, "note": "no copy ceiling: it is measured through torch with CUDA, "
                                              "which is unavailable here"}  # fmt: skip
            return _torch_ceiling(ctx.torch, ctx.torch_device, nbytes, a.iters, a.warmup)
        if dev.backend == "sycl":
            res = _sycl_ceiling(dev, nbytes, a.iters, a.warmup)
            if res is None:
                return {"gbps": None, "note": "no copy ceiling: the SYCL device exposes no dpctl queue "
                                              "for a profiled memcpy"}  # fmt: skip
            return res
    except Exception as e:
        return {"gbps": None, "note": f"copy ceiling failed: {type(e).__name__}: {e}"}
    return {"gbps": None, "note": f"no copy ceiling for backend {dev.backend}"}


def device_l2_bytes(ctx: Context) -> int | None:
    dev = ctx.dev
    try:
        if dev.backend == "opencl":
            return int(dev.dev.global_mem_cache_size)
        if dev.backend == "cuda" and ctx.torch is not None:
            return int(ctx.torch.cuda.get_device_properties(ctx.torch_device).L2_cache_size)
        if dev.backend == "sycl":
            q = _sycl_queue(dev)
            return int(q.sycl_device.global_mem_cache_size) if q is not None else None
    except Exception:
        return None
    return None


# --------------------------------------------------------------------------------------------
# Compile times: cold (empty qkgen cache) and warm (from the disk cache), each in a fresh process

_COMPILE_SCRIPT = r"""
import json, sys, time
from qkgen.backends import open_device
from qkgen.render import render
spec = json.loads(sys.argv[1])
dev = open_device(spec["backend"], spec["device"])
out = []
for kw in spec["kernels"]:
    kw = dict(kw)
    want = kw.pop("sha", None)
    ks = render(kw.pop("op"), kw.pop("format"), dev.backend, caps=dev.caps, **kw)
    t0 = time.perf_counter()
    dev.compile(ks)
    dt = time.perf_counter() - t0
    out.append({"kernel": ks.name, "same_source": want is None or want == ks.sha, "s": dt})
print("QKGEN_COMPILE_TIMES " + json.dumps(out))
"""


def _compile_run(backend: str, device: Any, kernels: list[dict], cache: Path) -> list[dict]:
    env = dict(os.environ, QKGEN_CACHE_DIR=str(cache), CUDA_CACHE_DISABLE="1")
    spec = json.dumps({"backend": backend, "device": device, "kernels": kernels})
    p = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT, spec], env=env, capture_output=True, text=True,
                       timeout=1800)  # fmt: skip
    for line in p.stdout.splitlines():
        if line.startswith("QKGEN_COMPILE_TIMES "):
            return json.loads(line.split(" ", 1)[1])
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    raise QKGenError(f"compile-time subprocess failed (rc {p.returncode}): {' | '.join(tail)}")


def compile_times(ctx: Context, kernels: list[dict]) -> dict:
    """Per kernel: seconds of dev.compile() in a fresh process with an empty qkgen cache (cold),
    then in another fresh process on the cache the first one wrote (warm). Toolchain artifacts
    that are not kernels (the SYCL host helper) are copied in first; CUDA's own JIT cache is off."""
    dev = ctx.dev
    uniq = list({json.dumps(k, sort_keys=True): k for k in kernels}.values())
    if not uniq:
        return {"kernels": [], "note": "no kernels"}
    from .cache import cache_dir

    with tempfile.TemporaryDirectory(prefix="qkgen-bench-cache-") as tmp:
        tmp_p = Path(tmp)
        helper = cache_dir("sycl_helper")
        if helper.is_dir():
            shutil.copytree(helper, tmp_p / "sycl_helper")
        before = {p for p in tmp_p.rglob("*") if p.is_file()}
        cold = _compile_run(dev.backend, ctx.args.device, uniq, tmp_p)
        written = len({p for p in tmp_p.rglob("*") if p.is_file()} - before)
        warm = _compile_run(dev.backend, ctx.args.device, uniq, tmp_p)
    rows = [{"kernel": c["kernel"], "cold_s": c["s"], "warm_s": w["s"]} for c, w in zip(cold, warm)]
    if not all(c["same_source"] for c in cold):
        raise QKGenError("compile-time process rendered a different source than the benchmarked kernel")
    out = {"kernels": rows, "cache_files_written": written,
           "method": "dev.compile() wall time in a fresh process: cold = empty QKGEN_CACHE_DIR, warm = the "
                     "cache the cold process wrote; CUDA_CACHE_DISABLE=1 in both"}  # fmt: skip
    if written == 0:
        out["note"] = "the cold process wrote no cache files: warm times are not disk-cache hits"
    return out


# --------------------------------------------------------------------------------------------
# Output


def command_line(args: argparse.Namespace) -> str:
    argv = getattr(args, "argv", None)
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "bench":
        prog = sys.argv[0]
        prog = "python -m qkgen" if prog.endswith("__main__.py") else Path(prog).name
        return " ".join([prog, shlex.join(sys.argv[1:])])
    if argv is not None:
        return "qkgen " + shlex.join(list(argv))
    return "qkgen " + shlex.join(effective_argv(args))


def effective_argv(args: argparse.Namespace) -> list[str]:
    """The options this run used, as a `qkgen bench` command line (when called from Python)."""
    out = ["bench", "--backend", args.backend_used, "--op", args.op, "--shapes", args.shapes_text,
           "--formats", args.formats_text, "--dtypes", args.dtypes_text, "--iters", str(args.iters),
           "--warmup", str(args.warmup)]  # fmt: skip
    if args.op == "gemv":
        out += ["--m", str(args.m)]
    if args.device is not None:
        out += ["--device", str(args.device)]
    return out


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def markdown(report: dict) -> str:
    c = report["copy_ceiling"]
    if c.get("gbps"):
        measured = ", ".join(f"{k} {v:.1f} GB/s" for k, v in c["all"].items())
        ceil_s = (f"{c['gbps']:.1f} GB/s ({c['method']}, {c['buffer_bytes'] / 2**20:.0f} MiB buffer, bytes "
                  f"read + written, median of {report['settings']['iters']}; measured: {measured})")
    else:
        ceil_s = c.get("note", "-")
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items() if k != "qkgen")
    s = report["settings"]
    lines = [
        f"# qkgen bench: {report['backend']} on {report['device']['name']}",
        "",
        f"- date (UTC): {report['date_utc']}",
        f"- command: `{report['command']}`",
        f"- device: {report['device']['line']}",
        f"- qkgen {report['versions']['qkgen']}; {versions}",
        f"- copy ceiling: {ceil_s}",
        f"- timing: device events; median of {s['iters']} launches after every set ran once and "
        f"{s['warmup']} warm-up launches; rotation over ceil({L2_FACTOR} * L2 / bytes per set) + 1 sets "
        f"(L2 = {s['l2_bytes'] / 1e6:.0f} MB, at most {s['max_mem_gb']} GiB of sets)",
    ]  # fmt: skip
    for op, formula in report["formulas"].items():
        lines.append(f"- bytes, {op}: {formula}; GB/s = bytes / median time; % copy = GB/s / copy ceiling")
    lines += [f"- note: {n}" for n in report["notes"]]
    rows = report["rows"]
    op_obj = CASES.get(report["settings"].get("op", ""))
    custom = op_obj.markdown_table(rows) if op_obj is not None else None
    impls = [i for i in dict.fromkeys(r["impl"] for r in rows) if i != "qkgen"] if custom is None else []
    head = ["op", "format", "variant", "dtype", "shape", "MB moved", "sets",
            "qkgen µs", "qkgen GB/s", "qkgen % copy"]  # fmt: skip
    for i in impls:
        head += [f"{i} µs", f"{i} GB/s", f"{i} % copy", f"{i} = qkgen", f"qkgen speed-up vs {i}"]
    groups: dict[tuple, dict[str, dict]] = {}
    if custom is not None:
        table, errors = custom
        lines += ["", *table]
    else:
        lines += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in rows:
            groups.setdefault((r["op"], r["format"], r["variant"], r["dtype"], r["shape"]), {})[r["impl"]] = r
        errors = []

    def cells(r: dict | None) -> list[str]:
        if r is None:
            return ["-", "-", "-"]
        if r["status"] != "ok":
            errors.append(f"{r['impl']} {r['format']} {r['variant']} {r['dtype']} {r['shape']}: {r['error']}")
            return ["error", "-", "-"]
        return [_fmt(r["us_median"], ".1f"), _fmt(r["gbps"], ".1f"), _fmt(r["pct_copy"], ".1f")]

    for key, by in groups.items():
        q = by.get("qkgen")
        any_r = q or next(iter(by.values()))
        line = [*key[:5], f"{any_r['bytes'] / 1e6:.2f}", str(any_r["sets"] or "-"), *cells(q)]
        for i in impls:
            b = by.get(i)
            line += cells(b)
            if b is None or b["status"] != "ok":
                line += ["-", "-"]
                continue
            eq = "-" if b["bit_equal_to_qkgen"] is None else (
                "bit-equal" if b["bit_equal_to_qkgen"] else f"max diff {b['max_abs_diff_vs_qkgen']:.3g}")
            sp = f"{b['us_median'] / q['us_median']:.2f}x" if q and q["status"] == "ok" else "-"
            line += [eq, sp]
        lines.append("| " + " | ".join(line) + " |")
    lines += ["", "Byte formulas (per case, one launch):", ""]
    seen: dict[tuple, set] = {}
    for r in rows:
        k = (r["op"], r["format"], r["variant"], r["dtype"], r["shape"])
        forms = seen.setdefault(k, set())
        if r["byte_formula"] not in forms:  # an impl that moves other bytes (dense torch) gets its own line
            who = f" ({r['impl']})" if forms else ""
            forms.add(r["byte_formula"])
            lines.append(f"- {' '.join(k)}{who}: {r['byte_formula']}")
    ct = report.get("compile_times")
    if ct and ct.get("kernels"):
        lines += ["", f"Compile times ({report['backend']}; {ct['method']}):", "",
                  "| kernel | cold s | warm s |", "|---|---|---|"]  # fmt: skip
        lines += [f"| {k['kernel']} | {k['cold_s']:.3f} | {k['warm_s']:.3f} |" for k in ct["kernels"]]
        if ct.get("note"):
            lines.append(f"\nnote: {ct['note']}")
    elif ct:
        lines += ["", f"Compile times: {ct.get('note', '-')}"]
    if report["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- {s}" for s in report["skipped"]]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {e}" for e in errors]
    return "\n".join(lines) + "\n"


def plot(report: dict, path: Path) -> None:
    plt = _matplotlib()
    rows = [r for r in report["rows"] if r["status"] == "ok"]
    labels = list(dict.fromkeys(f"{r['format']} {r['variant']}\n{r['dtype']} {r['shape']}" for r in rows))
    impls = list(dict.fromkeys(r["impl"] for r in rows))
    val = {(f"{r['format']} {r['variant']}\n{r['dtype']} {r['shape']}", r["impl"]): r["gbps"] for r in rows}
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(labels) * max(1, len(impls))), 5))
    width = 0.8 / max(1, len(impls))
    for j, impl in enumerate(impls):
        xs = [i + (j - (len(impls) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, [val.get((lab, impl), 0.0) for lab in labels], width, label=impl)
    c = report["copy_ceiling"].get("gbps")
    if c:
        ax.axhline(c, color="black", linestyle="--", linewidth=1, label=f"copy ceiling {c:.0f} GB/s")
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("GB/s (bytes moved / median time)")
    ax.set_title(f"qkgen bench: {report['backend']} on {report['device']['name']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise QKGenError(f"--plot needs matplotlib ({e}); pip install 'qkgen[bench]' or matplotlib") from None
    return plt


def _versions() -> dict:
    out = {"qkgen": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("torch", "bitsandbytes", "pyopencl", "pycuda", "dpctl"):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = getattr(m, "__version__", getattr(m, "VERSION_TEXT", "?"))
    return out


# --------------------------------------------------------------------------------------------
# CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", "-b", choices=("cuda", "opencl", "sycl"),
                   help="default: $QKGEN_BACKEND or the first available")  # fmt: skip
    p.add_argument("--device", "-d", help="device index or name substring")
    p.add_argument("--op", default="dequantize", choices=sorted(CASES), help="op (default dequantize)")
    p.add_argument("--shapes", help="comma-separated RxC sizes (gemv: NxK, y = x @ W.T with W [N, K]); "
                                    f"default: dequantize {DEFAULT_SHAPES}; gemv {GEMV_DEFAULT_SHAPES}")
    p.add_argument("--formats",
                   help="comma-separated NAME[:VARIANT][@SIZE]; VARIANT nested|plain (nf4/fp4, default "
                        "nested), tensor|row|group (int formats, default row); SIZE a bnb blocksize (default "
                        f"64, blockwise8 256) or int group size (default 64). Default: dequantize "
                        f"{DEFAULT_FORMATS}; gemv {GEMV_DEFAULT_FORMATS}")
    p.add_argument("--m", type=int, default=1, help=f"gemv: rows of x, 1..{api.MAX_M} (1)")
    p.add_argument("--dtypes", default=DEFAULT_DTYPES, help=f"output dtypes (default {DEFAULT_DTYPES})")
    p.add_argument("--iters", type=int, default=50, help="timed launches per row, median reported (50)")
    p.add_argument("--warmup", type=int, default=5, help="warm-up launches after every set ran once (5)")
    p.add_argument("--l2-mb", type=float, default=L2_DEFAULT_MB,
                   help=f"L2 MB for the rotation rule; the device's own wins if larger ({L2_DEFAULT_MB:g})")
    p.add_argument("--max-mem-gb", type=float, default=4.0, help="cap on the rotated sets' memory, GiB (4)")
    p.add_argument("--copy-mb", type=float, default=1024.0, help="copy-ceiling buffer, MiB (1024)")
    p.add_argument("--no-bnb", action="store_true", help="skip the bitsandbytes rows (CUDA only anyway)")
    p.add_argument("--compile-times", action=argparse.BooleanOptionalAction, default=True,
                   help="time cold and warm compiles of the run's kernels in fresh processes (on)")
    p.add_argument("--json", help="JSON output (default bench-out/bench-<backend>.json)")
    p.add_argument("--markdown", help="markdown output (default bench-out/bench-<backend>.md)")
    p.add_argument("--plot", help="also write a PNG bar chart of GB/s vs the copy ceiling (matplotlib)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _validate(args: argparse.Namespace) -> None:
    if args.iters < 1:
        raise QKGenValueError(f"--iters: {args.iters}; allowed: 1 or more")
    if args.warmup < 0:
        raise QKGenValueError(f"--warmup: {args.warmup}; allowed: 0 or more")
    for name in ("l2_mb", "max_mem_gb", "copy_mb"):
        if not getattr(args, name) > 0:
            opt = "--" + name.replace("_", "-")
            raise QKGenValueError(f"{opt}: {getattr(args, name)}; allowed: a positive number")
    if args.op not in CASES:
        raise QKGenValueError(f"--op: {args.op!r}; allowed: {', '.join(sorted(CASES))}")
    if not 1 <= getattr(args, "m", 1) <= api.MAX_M:
        raise QKGenValueError(f"--m: {args.m}; allowed: 1..{api.MAX_M}")


def main(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .backends import open_device

    _validate(args)
    op = CASES[args.op]
    args.shapes = args.shapes or op.default_shapes
    args.formats = args.formats or op.default_formats
    args.shapes_text, args.formats_text, args.dtypes_text = args.shapes, args.formats, args.dtypes
    args.shapes, args.formats, args.dtypes = (parse_shapes(args.shapes), parse_formats(args.formats),
                                              parse_dtypes(args.dtypes))  # fmt: skip
    if args.plot:
        _matplotlib()  # fail before the run, not after it
    dev = open_device(args.backend, args.device)
    args.backend_used = dev.backend
    out_json = Path(args.json or f"bench-out/bench-{dev.backend}.json")
    out_md = Path(args.markdown or f"bench-out/bench-{dev.backend}.md")
    ctx = Context(dev, args)
    specs = op.specs(args)
    skipped = op.skipped(args)
    detected_l2 = device_l2_bytes(ctx)
    l2_bytes = max(args.l2_mb * 1e6, detected_l2 or 0)
    print(f"bench: {dev.backend} on {dev.info.name}; {len(specs)} case(s); copy ceiling ...", file=sys.stderr)
    ceiling = copy_ceiling(ctx)
    cgbps = ceiling.get("gbps")
    msg = f"copy ceiling {cgbps:.1f} GB/s ({ceiling['method']})" if cgbps else ceiling["note"]
    print(f"bench: {msg}", file=sys.stderr)
    rows: list[Row] = []
    kernels: list[dict] = []
    bar = tqdm(specs, desc="bench", unit="case", file=sys.stderr, disable=args.no_progress, leave=False)
    for spec in bar:
        try:
            case = op.prepare(ctx, spec)
        except Exception as e:  # render/build/quantize failure: an error row, no numbers
            msg = str(e).splitlines()[0] if str(e) else ""
            rows.append(Row(op=spec.op, format=spec.sel.name, variant=spec.sel.label, dtype=spec.dtype,
                            shape=spec.shape_str, impl="qkgen", m=spec.m, status="error",
                            error=f"{type(e).__name__}: {msg}"))  # fmt: skip
            continue
        if case.render_kwargs:
            kernels.append({**case.render_kwargs, "sha": case.kernel_sha})
        kernels += case.extra_kernels
        rows += run_case(ctx, case, cgbps, l2_bytes)
        del case
    ctx._qt, ctx._derived = None, {}
    ct = None
    if args.compile_times:
        print("bench: compile times (cold, warm) in fresh processes ...", file=sys.stderr)
        try:
            ct = compile_times(ctx, kernels)
        except Exception as e:
            ct = {"kernels": [], "note": f"compile timing failed: {type(e).__name__}: {e}"}
    report = {
        "tool": "qkgen bench",
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command_line(args),
        "backend": dev.backend,
        "device": {"name": dev.info.name, "index": dev.info.index, "kind": dev.info.kind,
                   "platform": dev.info.platform, "line": dev.info.line()},  # fmt: skip
        "host": platform.node(),
        "versions": _versions(),
        "copy_ceiling": ceiling,
        "settings": {"op": args.op, "iters": args.iters, "warmup": args.warmup, "l2_bytes": l2_bytes,
                     "l2_bytes_device": detected_l2, "l2_factor": L2_FACTOR, "max_mem_gb": args.max_mem_gb,
                     "seed": args.seed, "shapes": args.shapes_text, "formats": args.formats_text,
                     "dtypes": args.dtypes_text, **({"m": args.m} if args.op == "gemv" else {})},  # fmt: skip
        "formulas": {op.name: op.formula},
        "notes": ctx.notes,
        "skipped": skipped,
        "rows": [asdict(r) for r in rows],
        "compile_times": ct,
    }
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(report, indent=1) + "\n")
    md = markdown(report)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(md)
    if args.plot:
        plot(report, Path(args.plot))
    sys.stdout.write(md)
    print(f"\nwrote {out_json} and {out_md}" + (f" and {args.plot}" if args.plot else ""))
    return 0 if all(r.status == "ok" for r in rows) and rows else 1
