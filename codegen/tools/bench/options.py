"""`qkgen bench` options: the argument parser, its validation, and the selection it names
(shapes, formats with their statistics layout, dtypes)."""

from __future__ import annotations

import argparse
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

from qkgen.dtypes import FLOAT_DTYPES, float_dtype
from qkgen.errors import QKGenValueError

from . import qkgen_impl
from .cases import CASES, DEFAULT_DTYPES
from .harness import L2_DEFAULT_MB
from .llamacpp import check_binary



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
    blocksize: int | None = None  # the block or group size where the layout takes one
    scale_mode: str | None = None

    @property
    def fmt(self):
        return qkgen_impl.format_row(self.name)

    @property
    def label(self) -> str:
        parts = ["nested"] if self.nested else []
        parts += [self.scale_mode] if self.scale_mode else []
        if self.blocksize is not None:
            parts.append(f"{'g' if self.scale_mode else 'bs'}{self.blocksize}")
        return " ".join(parts) or "-"

    def quantize_kwargs(self) -> dict:
        kw = {"blocksize": self.blocksize, "nested": self.nested}
        return {**kw, "scale_mode": self.scale_mode} if self.scale_mode else kw


def parse_formats(text: str) -> list[FormatSel]:
    """NAME[:VARIANT][@SIZE], comma-separated. VARIANT: the family's variant words (nested|plain for
    nf4/fp4, default nested; tensor|row|group for int formats, default row); SIZE: the block size,
    or the group size of the group variant."""
    out: list[FormatSel] = []
    for tok in filter(None, (t.strip() for t in text.split(","))):
        body, _, size_s = tok.partition("@")
        name, _, var = body.partition(":")
        fmt = qkgen_impl.format_row(name)  # FormatError (a ValueError) lists the names
        words = qkgen_impl.variant_words(fmt)
        kw = words.get(var or next(iter(words)))
        if kw is None:
            raise QKGenValueError(f"--formats: {tok!r}; allowed variants for {name}: {', '.join(w for w in words if w)}")
        size = None
        if size_s:
            if not size_s.isdigit():
                raise QKGenValueError(f"--formats: {tok!r}: size {size_s!r} is not an integer")
            size = qkgen_impl.check_blocksize(fmt, int(size_s))
        sized = len(fmt.blocksizes) > 1 and kw.get("scale_mode") in (None, "group")
        if size and not sized:
            raise QKGenValueError(f"--formats: {tok!r}; {name}{':' + var if var else ''} takes no size")
        out.append(FormatSel(name, nested=kw.get("nested", False), scale_mode=kw.get("scale_mode"),
                             blocksize=(size or fmt.block) if sized else None))  # fmt: skip
    if not out:
        raise QKGenValueError("--formats: empty")
    return out


def parse_dtypes(text: str) -> list[str]:
    out = [float_dtype(t.strip(), "--dtypes") for t in text.split(",") if t.strip()]
    if not out:
        raise QKGenValueError(f"--dtypes: empty; allowed: {', '.join(FLOAT_DTYPES)}")
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    ops = sorted(CASES)
    max_m = qkgen_impl.max_m()
    p.add_argument("--backend", "-b", choices=("cuda", "opencl", "sycl"),
                   help="default: $QKGEN_BACKEND or the first available")  # fmt: skip
    p.add_argument("--device", "-d", help="device index or name substring")
    p.add_argument("--op", default="dequantize", choices=ops, help="op (default dequantize)")
    p.add_argument("--shapes", help="comma-separated RxC sizes (gemv: NxK, y = x @ W.T with W [N, K]); "
                                    "default: " + "; ".join(f"{o} {CASES[o].default_shapes}" for o in ops))
    p.add_argument("--formats",
                   help="comma-separated NAME[:VARIANT][@SIZE]; VARIANT nested|plain (nf4/fp4, default "
                        "nested), tensor|row|group (int formats, default row); SIZE the block size, or the "
                        "group size of the group variant (default: the format table's). Default: "
                        + "; ".join(f"{o} {CASES[o].default_formats}" for o in ops))
    p.add_argument("--m", default="1", help=f"gemv: rows of x, 1..{max_m}; a comma-separated list runs each")
    p.add_argument("--dtypes", default=DEFAULT_DTYPES, help=f"output dtypes (default {DEFAULT_DTYPES})")
    p.add_argument("--iters", type=int, default=50, help="timed samples per row and mode, median reported")
    p.add_argument("--warmup", type=int, default=5, help="untimed samples after every set ran once (5)")
    p.add_argument("--hot", action="store_true", help="time hot: every launch on one set (default: both)")
    p.add_argument("--cold", action="store_true",
                   help="time cold: launches rotate over sets > 4x L2 (default: hot and cold)")
    p.add_argument("--timing", default="auto", choices=("auto", "graph", "span", "events"),
                   help="device timing: auto = CUDA-graph replay on CUDA with torch, events around "
                        "back-to-back launches on OpenCL/SYCL; span = those events on any backend (on CUDA "
                        "around launches on torch's stream: OpenCL's timer, for side-by-side runs; it counts the host's "
                        "launch cost where that exceeds the kernel's time); "
                        "events = one launch between two events")
    p.add_argument("--launches", type=int, default=100,
                   help="launches per sample (per graph / event span); cold: a whole number of passes over "
                        "the sets (100)")
    p.add_argument("--host-calls", type=int, default=200,
                   help="back-to-back public calls the host µs/call column times; 0: no host column (200)")
    p.add_argument("--llamacpp", metavar="PATH",
                   help="llama.cpp's test-backend-ops binary: adds llama.cpp rows (MUL_MAT, hot) to gemv")
    p.add_argument("--llamacpp-backend", metavar="NAME",
                   help="ggml backend for --llamacpp (default CUDA<device index>, SYCL<index> or OpenCL)")
    p.add_argument("--l2-mb", type=float, default=L2_DEFAULT_MB,
                   help=f"L2 MB for the rotation rule; the device's own wins if larger ({L2_DEFAULT_MB:g})")
    p.add_argument("--max-mem-gb", type=float, default=4.0, help="cap on the rotated sets' memory, GiB (4)")
    p.add_argument("--copy-mb", type=float, default=1024.0, help="copy-ceiling buffer, MiB (1024)")
    p.add_argument("--no-bnb", action="store_true", help="skip the bitsandbytes rows (CUDA only anyway)")
    p.add_argument("--compile-times", action=argparse.BooleanOptionalAction, default=True,
                   help="time cold and warm compiles of the run's kernels in fresh processes (on)")
    p.add_argument("--json", help="JSON output (default bench-out/bench-<backend>.json)")
    p.add_argument("--markdown", help="markdown output (default bench-out/bench-<backend>.md)")
    p.add_argument("--plot", help="also write a PNG chart of %% of copy per format and M (matplotlib)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (0)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (there is none anyway when stderr is not a terminal)")


def validate(args: argparse.Namespace) -> None:
    """Reject bad option values before a device is opened."""
    if args.iters < 1:
        raise QKGenValueError(f"--iters: {args.iters}; allowed: 1 or more")
    if args.warmup < 0:
        raise QKGenValueError(f"--warmup: {args.warmup}; allowed: 0 or more")
    for name in ("l2_mb", "max_mem_gb", "copy_mb"):
        v = getattr(args, name)
        if not (math.isfinite(v) and v > 0):  # inf would ask for unbounded sets; nan compares false
            opt = "--" + name.replace("_", "-")
            raise QKGenValueError(f"{opt}: {v}; allowed: a positive finite number")
    if args.op not in CASES:
        raise QKGenValueError(f"--op: {args.op!r}; allowed: {', '.join(sorted(CASES))}")
    args.ms = parse_ms(str(getattr(args, "m", 1)))
    if args.launches < 1:
        raise QKGenValueError(f"--launches: {args.launches}; allowed: 1 or more")
    if args.host_calls < 0:
        raise QKGenValueError(f"--host-calls: {args.host_calls}; allowed: 0 (no host column) or more")
    args.modes = tuple(m for m in ("cold", "hot") if getattr(args, m, False)) or ("cold", "hot")
    if args.llamacpp:
        if args.op != "gemv":
            raise QKGenValueError("--llamacpp: llama.cpp rows are MUL_MAT rows; allowed with --op gemv")
        args.llamacpp = check_binary(args.llamacpp)
    elif args.llamacpp_backend:
        raise QKGenValueError("--llamacpp-backend: needs --llamacpp PATH")


def parse_ms(text: str) -> list[int]:
    """--m: comma-separated rows of x, each 1..max_m, no repeats."""
    max_m = qkgen_impl.max_m()
    out: list[int] = []
    for tok in filter(None, (t.strip() for t in text.split(","))):
        if not tok.isdigit() or not 1 <= int(tok) <= max_m or int(tok) in out:
            raise QKGenValueError(f"--m: {text}; allowed: 1..{max_m}, or a comma-separated list of them")
        out.append(int(tok))
    if not out:
        raise QKGenValueError(f"--m: {text!r}; allowed: 1..{max_m}, or a comma-separated list of them")
    return out


def check_writable(path: str | Path, option: str) -> None:
    """Fail now, not after the run, when `path` cannot be written (missing folders are made later)."""
    p = Path(path).absolute()
    if p.is_dir():
        raise QKGenValueError(f"{option}: {path} is a directory; allowed: a file path")
    try:
        if p.exists():
            open(p, "ab").close()  # appending nothing leaves the file as it is
            return
        parent = p.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise QKGenValueError(f"{option}: {path}: {parent} is not a directory")
        tempfile.TemporaryFile(dir=parent).close()  # a write probe that leaves nothing behind
    except OSError as e:
        raise QKGenValueError(f"{option}: {path} is not writable ({e.strerror or e})") from None
