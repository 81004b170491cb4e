"""The `qkgen` command (also `python -m qkgen`).

    qkgen devices                              backends and devices, and why any is missing
    qkgen formats                              the format table
    qkgen dump OP FORMAT --backend B [...]     print one generated kernel (or -o DIR: write it)
    qkgen dump --all -o DIR                    write every kernel, rewriting only changed files
    qkgen check [--backend B] [--device D]     run every kernel against the reference
    qkgen bench [...]                          time kernels (see `qkgen bench --help`)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import formats as F
from .dialects import BACKENDS, DTYPES
from .errors import QKGenError
from .version import __version__


def cmd_devices(args) -> int:
    from .backends import PREFERENCE, get

    usable = 0
    for name in PREFERENCE:
        try:
            backend = get(name)
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
    if not usable:
        print("no usable backend: install an extra, e.g. pip install 'qkgen[opencl,cpu-runtime]'")
    return 0


def cmd_formats(args) -> int:
    print(f"{'name':<11} {'family':<6} {'bits':>4} {'block':>6} {'bytes/blk':>9} {'bpw':>5}  description")
    for f in F.ROWS:
        blk = f"{f.block}" if len(f.blocksizes) == 1 else f"{f.blocksizes[0]}..{f.blocksizes[-1]}"
        print(f"{f.name:<11} {f.family:<6} {f.bits:>4} {blk:>6} {f.block_bytes or '-':>9} "
              f"{f.bits_per_weight:>5.2f}  {f.doc}")  # fmt: skip
    return 0


def _write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def cmd_dump(args) -> int:
    from .catalog import variants
    from .render import ops, render

    if args.all:
        if not args.output:
            raise QKGenError("dump --all: needs -o DIR")
        out = Path(args.output)
        written = total = 0
        for backend in args.backend or BACKENDS:
            (out / backend).mkdir(parents=True, exist_ok=True)
            for op in [args.op] if args.op else ops():
                for v in variants(op):
                    ks = render(v.pop("op"), v.pop("format"), backend, **v)
                    total += 1
                    written += _write_if_changed(out / backend / ks.filename, ks.source)
        print(f"{total} kernels in {out}/ ({written} written, {total - written} unchanged)")
        return 0
    if not (args.op and args.format):
        raise QKGenError("dump: give OP FORMAT (e.g. `qkgen dump dequantize nf4 --backend cuda`) or --all")
    backend = (args.backend or ["opencl"])[0]
    ks = render(args.op, args.format, backend, dtype=args.dtype, blocksize=args.blocksize, nested=args.nested,
                scale_mode=args.scale_mode)  # fmt: skip
    if args.output:
        path = Path(args.output)
        path.mkdir(parents=True, exist_ok=True)
        changed = _write_if_changed(path / ks.filename, ks.source)
        print(f"{path / ks.filename} ({'written' if changed else 'unchanged'})")
    else:
        sys.stdout.write(ks.source)
    return 0


def cmd_check(args) -> int:
    from . import check
    from .backends import open_device

    dev = open_device(args.backend, args.device)
    print(f"check: {dev.backend} on {dev.info.name}")
    results = check.run(dev.backend, args.device, args.format, progress=not args.no_progress)
    print(check.table(results))
    return 0 if all(r.status == "PASS" for r in results) else 1


def cmd_bench(args) -> int:
    from . import bench

    return bench.main(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="qkgen", description="Quantization kernels for CUDA, SYCL and OpenCL.")
    p.add_argument("--version", action="version", version=f"qkgen {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("devices", help="list backends and devices").set_defaults(func=cmd_devices)
    sub.add_parser("formats", help="print the format table").set_defaults(func=cmd_formats)

    d = sub.add_parser("dump", help="print or write generated kernel source")
    d.add_argument("op", nargs="?", help="kernel family, e.g. dequantize")
    d.add_argument("format", nargs="?", choices=list(F.FORMATS), metavar="FORMAT",
                   help=f"one of: {', '.join(F.FORMATS)}")  # fmt: skip
    d.add_argument("--backend", "-b", action="append", choices=BACKENDS,
                   help="backend (repeatable with --all; default: opencl, or all with --all)")  # fmt: skip
    d.add_argument("--dtype", default="f32", choices=DTYPES)
    d.add_argument("--blocksize", type=int, help="blocksize (group size for int formats)")
    d.add_argument("--nested", action="store_true", help="nested statistics (nf4/fp4)")
    d.add_argument("--scale-mode", choices=("tensor", "row", "group"), help="int formats: where scales live")
    d.add_argument("--all", action="store_true", help="every op x format x dtype x variant x backend")
    d.add_argument("-o", "--output", help="write into this folder (only files whose content changed)")
    d.set_defaults(func=cmd_dump)

    c = sub.add_parser("check", help="run every kernel against the reference on a device")
    c.add_argument("--backend", "-b", choices=BACKENDS, help="default: $QKGEN_BACKEND or the first available")
    c.add_argument("--device", "-d", help="device index or name substring")
    c.add_argument("--format", "-f", action="append", choices=list(F.FORMATS), help="only these formats")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.set_defaults(func=cmd_check)

    b = sub.add_parser("bench", help="time kernels against bitsandbytes, torch and the copy ceiling")
    b.set_defaults(func=cmd_bench)
    try:
        from . import bench

        bench.add_arguments(b)
    except ImportError:
        pass
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "dump" and args.scale_mode is None and args.format and F.get(args.format).family == "int":
        args.scale_mode = "row"
    try:
        return args.func(args)
    except QKGenError as e:
        print(f"qkgen {args.command}: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # FormatError and other bad input
        print(f"qkgen {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
