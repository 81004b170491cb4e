"""The `qkgen` command (also `python -m qkgen`).

    qkgen devices                                backends, devices and their targets; why any is missing
    qkgen formats                                the format table
    qkgen targets                                the named target profiles and their capabilities
    qkgen dump OP FORMAT [--target T]            print one generated kernel (or -o DIR: write it)
    qkgen dump OP FORMAT --backend B --device D  ... exactly as that device compiles it
    qkgen dump --all -o DIR                      write every kernel, rewriting only changed files
    qkgen check [--backend B] [--device D]       run every kernel against the reference
    qkgen bench [...]                            time kernels (see `qkgen bench --help`)
    qkgen generate MODEL.gguf --prompt TEXT      greedy generation with every linear layer on qkgen
    qkgen cache [clear]                          where the kernel cache is, its size; empty it

Errors go to stderr with exit status 2; a failed check exits 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import dtypes
from ..errors import QKGenError
from ..formats import FORMATS, family_of, get, rows
from ..kernels.ops import MAX_M, OPS
from ..kernels.target import BACKENDS, DEFAULT_PROFILE, PROFILES
from ..version import __version__


def cmd_devices(args) -> int:
    from ..backends import PREFERENCE, get as get_backend
    from ..backends.icd import notes

    usable = 0
    for name in PREFERENCE:
        try:
            backend = get_backend(name)
            why = backend.why_unavailable()
        except Exception as e:  # a backend module that cannot even import is still reported
            backend, why = None, f"{type(e).__name__}: {e}"
        if why:
            print(f"{name:7} unavailable: {why}")
            continue
        devs = backend.devices()
        usable += 1
        print(f"{name:7} {len(devs)} device(s)")
        for d in devs:
            print(f"        {d.line()}")
        for why in getattr(backend, "unusable", ()):
            print(f"        left out: {why}")
    for note in notes():
        print(f"note: {note}")
    if not usable:
        print("no usable backend: install an extra, e.g. pip install 'qkgen[opencl,cpu-runtime]'", file=sys.stderr)
        return 1
    return 0


def cmd_formats(args) -> int:
    print(f"{'name':<11} {'family':<6} {'bits':>4} {'block':>6} {'bytes/blk':>9} {'bpw':>5}  description")
    for f in rows():
        blk = f"{f.block}" if len(f.blocksizes) == 1 else f"{f.blocksizes[0]}..{f.blocksizes[-1]}"
        print(f"{f.name:<11} {f.family:<6} {f.bits:>4} {blk:>6} {f.block_bytes or '-':>9} "
              f"{f.bits_per_weight:>5.2f}  {f.doc}")  # fmt: skip
    return 0


def cmd_targets(args) -> int:
    defaults = {v: k for k, v in DEFAULT_PROFILE.items()}
    print(f"{'target':<20} {'backend':<7} {'language':<13} {'fp16':>4} {'bf16':>4} {'sub-group':>9} {'dot4':>4}  arch")
    for t in PROFILES.values():
        sg = f"{t.subgroup_size}" if t.subgroups else "-"
        mark = f"  (default for {defaults[t.name]})" if t.name in defaults else ""
        print(f"{t.name:<20} {t.backend:<7} {t.lang:<13} {_yn(t.fp16):>4} {_yn(t.bf16):>4} {sg:>9} "
              f"{'ptx' if t.dot4 and t.inline_ptx else _yn(t.dot4):>4}  {t.arch or '-'}{mark}")  # fmt: skip
    return 0


def _yn(v: bool) -> str:
    return "yes" if v else "no"


def _write_if_changed(path: Path, text: str) -> bool:
    """Write text unless the file already holds it (keeps mtimes for build tools); True if written."""
    try:
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return False
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise QKGenError(f"-o: cannot write {path}: {e.strerror or e}") from None
    return True


class _ParamAction(argparse.Action):
    """--param KNOB=VALUE into a dict: true/false are on/off, digits an int, anything else a word."""

    def __call__(self, parser, namespace, value, option_string=None):
        key, eq, raw = value.partition("=")
        if not (eq and key.isidentifier()):
            parser.error(f"--param: {value!r}; allowed: KNOB=VALUE, e.g. prefetch=true")
        words = {"true": True, "false": False}
        v = words.get(raw.lower(), int(raw) if raw.isdigit() else raw)
        setattr(namespace, self.dest, {**(getattr(namespace, self.dest) or {}), key: v})


def _dump_targets(args) -> list:
    """The targets `dump` renders for: --target names, a device's own (--backend/--device), or defaults."""
    from ..kernels.target import get_target

    if args.device is not None:
        from ..backends import open_device

        return [open_device(args.backend[0] if args.backend else None, args.device).target]
    if args.target:
        return [get_target(t) for t in args.target]
    return [get_target(b) for b in (args.backend or (BACKENDS if args.all else ["opencl"]))]


def cmd_dump(args) -> int:
    from ..kernels.render import render
    from .catalog import variants

    targets = _dump_targets(args)
    if args.all:
        if not args.output:
            raise QKGenError("dump --all: needs -o DIR")
        out = Path(args.output)
        written = total = 0
        for t in targets:
            for v in variants(args.op or None):
                ks = render(v.pop("op"), v.pop("format"), t, **v)
                total += 1
                written += _write_if_changed(out / t.name / ks.filename, ks.source)
        print(f"{total} kernels in {out}/ ({written} written, {total - written} unchanged)")
        return 0
    free = args.op in OPS and OPS[args.op].format_free  # an op that reads no row: FORMAT may be left out
    if not (args.op and (args.format or free)):
        raise QKGenError("dump: give OP FORMAT (e.g. `qkgen dump dequantize nf4 --target cuda-sm90`) or --all")
    fmt = get(args.format) if args.format else None
    row = family_of(fmt).default_variant(fmt) if fmt is not None and not free else {}
    kw = {**row, **{k: v for k, v in (("scale_mode", args.scale_mode),) if v}}
    names = ("mmax", "wg", "ept", "cpi", "rpw", "slices", "layout")
    params = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    if args.no_fast_decode:
        params["fast_decode"] = False
    params.update(args.param or {})
    for t in targets:
        spec_dtypes = OPS[args.op].dtypes
        dtype = args.dtype or (spec_dtypes[0] if "f32" not in spec_dtypes else "f32")  # repack_planes: u8
        ks = render(args.op, fmt, t, dtype=dtype, blocksize=args.blocksize, nested=args.nested, **kw, **params)
        if args.output:
            path = Path(args.output) / ks.filename
            print(f"{path} ({'written' if _write_if_changed(path, ks.source) else 'unchanged'})")
        else:
            sys.stdout.write(ks.source)
    return 0


def cmd_check(args) -> int:
    from ..backends import open_device
    from . import check

    dev = open_device(args.backend, args.device)
    print(f"check: {dev.backend} on {dev.info.name} (target {dev.target.describe()})")
    results = check.run(dev.backend, args.device, args.format, progress=not args.no_progress)
    print(check.table(results))
    return 0 if all(r.status == "PASS" for r in results) else 1


def cmd_bench(args) -> int:
    from .bench import main

    return main(args)


def cmd_cache(args) -> int:
    from ..cache import cache_info, clear_cache

    if args.action == "clear":
        print(f"removed {clear_cache()} file(s) from {cache_info()['path']}")
        return 0
    info = cache_info()
    print(f"{info['path']}: {info['files']} file(s), {info['bytes'] / 2**20:.1f} MiB")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="qkgen", description="Quantization kernels for CUDA, SYCL and OpenCL.")
    p.add_argument("--version", action="version", version=f"qkgen {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("devices", help="list backends, devices and their targets").set_defaults(func=cmd_devices)
    sub.add_parser("formats", help="print the format table").set_defaults(func=cmd_formats)
    sub.add_parser("targets", help="list the named target profiles").set_defaults(func=cmd_targets)

    d = sub.add_parser("dump", help="print or write generated kernel source")
    d.add_argument("op", nargs="?", choices=list(OPS), metavar="OP", help=f"one of: {', '.join(OPS)}")
    d.add_argument("format", nargs="?", metavar="FORMAT", help=f"one of: {', '.join(FORMATS)}")
    d.add_argument("--target", "-t", action="append", choices=list(PROFILES), metavar="TARGET",
                   help=f"a profile (repeatable; see `qkgen targets`): {', '.join(PROFILES)}")  # fmt: skip
    d.add_argument("--backend", "-b", action="append", choices=BACKENDS,
                   help="a backend's default profile (repeatable); with --device: that backend's device")  # fmt: skip
    d.add_argument("--device", "-d", help="render for this device's own target (index or name substring)")
    d.add_argument("--dtype", default=None, choices=(*dtypes.FLOAT_DTYPES, "u8"),
                   help="default: f32 (u8 for repack_planes, which moves bytes)")
    d.add_argument("--blocksize", type=int, help="blocksize (group size for int formats)")
    d.add_argument("--nested", action="store_true", help="nested statistics (nf4/fp4)")
    d.add_argument("--scale-mode", choices=("tensor", "row", "group"), help="int formats: where scales live")
    d.add_argument("--layout", choices=("blocks", "planes", "fragments"),
                   help="gemv_int8dot: the weight and q8_1 layout (blocks, planes); quantize_q8_1: the q8_1 "
                        "layout (fragments: what gemv_int8frag reads)")  # fmt: skip
    d.add_argument("--mmax", type=int, help=f"gemv: activation rows the kernel takes (1..{MAX_M})")
    d.add_argument("--wg", type=int, help="work-group size")
    d.add_argument("--ept", type=int, help="elements each work-item decodes per chunk")
    d.add_argument("--rpw", type=int, help="gemv: rows each lane group takes")
    d.add_argument("--slices", type=int, help="gemv: lane groups sharing a row group")
    d.add_argument("--cpi", type=int, help="dequantize: chunks each work-item decodes")
    d.add_argument("--no-fast-decode", action="store_true", help="gemv: plain int -> float conversion")
    d.add_argument("--param", action=_ParamAction, metavar="KNOB=VALUE",
                   help="any other knob of the op (repeatable), as the runtime's tables set them: e.g. "
                        "prefetch=true, x_planes=true, lane_group=true, unroll=2; an unknown one is refused "
                        "with the op's list")  # fmt: skip
    d.add_argument("--all", action="store_true", help="every op x format x variant x dtype for the targets")
    d.add_argument("-o", "--output", help="write into this folder (only files whose content changed)")
    d.set_defaults(func=cmd_dump)

    c = sub.add_parser("check", help="run every kernel against the reference on a device")
    c.add_argument("--backend", "-b", choices=BACKENDS, help="default: $QKGEN_BACKEND or the first available")
    c.add_argument("--device", "-d", help="device index or name substring (platform names too, e.g. pocl)")
    c.add_argument("--format", "-f", action="append", choices=list(FORMATS), help="only these formats")
    c.add_argument("--no-progress", action="store_true", help="no progress bar (none when stderr is not a terminal)")
    c.set_defaults(func=cmd_check)

    b = sub.add_parser("bench", help="time kernels against bitsandbytes, torch and the copy ceiling")
    b.set_defaults(func=cmd_bench)
    from .bench import add_arguments

    add_arguments(b)

    from . import generate

    g = sub.add_parser("generate", help="greedy generation from a GGUF Llama model on qkgen's kernels")
    generate.add_arguments(g)
    g.set_defaults(func=generate.main)

    k = sub.add_parser("cache", help="show the compiled-kernel cache, or clear it")
    k.add_argument("action", nargs="?", choices=("show", "clear"), default="show")
    k.set_defaults(func=cmd_cache)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except QKGenError as e:  # every qkgen error, bad input (QKGenValueError, FormatError) included
        print(f"qkgen {args.command}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"qkgen {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"qkgen {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
