"""`qkgen bench`: time generated kernels, next to bitsandbytes, dense torch, llama.cpp and the
copy ceiling, every implementation the same way (CUDA-graph replay / event spans, hot and cold).
main() ties the parts together: options, cases, harness, compile times, report."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
from dataclasses import asdict
from pathlib import Path

from . import report, timing
from .cases import CASES, Context
from .harness import L2_FACTOR, Row, copy_ceiling, device_l2_bytes, run_case
from .options import check_writable, parse_dtypes, parse_formats, parse_shapes, validate


def _status(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr)


def _run_cases(ctx: Context, op, specs: list, ceiling_gbps: float | None,
               l2_bytes: float) -> tuple[list[Row], list[dict]]:  # fmt: skip
    """(rows, kernels to time compiles of) for every spec; a case that cannot even be prepared is
    one error row."""
    from tqdm import tqdm

    rows: list[Row] = []
    kernels: list[dict] = []
    # no bar in logs: tqdm's redraws fill a file with carriage-return updates
    quiet = ctx.args.no_progress or not sys.stderr.isatty()
    for spec in tqdm(specs, desc="bench", unit="case", file=sys.stderr, disable=quiet, leave=False):
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
        rows += run_case(ctx, case, ceiling_gbps, l2_bytes)
        del case
    return rows, kernels


def main(args: argparse.Namespace) -> int:
    from qkgen.backends import open_device

    validate(args)
    op = CASES[args.op]
    args.shapes = args.shapes or op.default_shapes
    args.formats = args.formats or op.default_formats
    args.shapes_text, args.formats_text, args.dtypes_text = args.shapes, args.formats, args.dtypes
    args.shapes, args.formats, args.dtypes = (parse_shapes(args.shapes), parse_formats(args.formats),
                                              parse_dtypes(args.dtypes))  # fmt: skip
    if args.plot:
        report.matplotlib_pyplot()  # fail before the run, not after it
    dev = open_device(args.backend, args.device)
    args.backend_used = dev.backend
    out_json = Path(args.json or f"bench-out/bench-{dev.backend}.json")
    out_md = Path(args.markdown or f"bench-out/bench-{dev.backend}.md")
    for path, opt in ((out_json, "--json"), (out_md, "--markdown"), (args.plot, "--plot")):
        if path:
            check_writable(path, opt)  # before the run, not after it
    ctx = Context(dev, args)
    why = f" ({ctx.timing_note})" if ctx.timing_note else ""
    _status(f"device timing: {timing.LABELS[ctx.timing]}{why}")
    specs = op.specs(args)
    skipped = op.skipped(args)
    detected_l2 = device_l2_bytes(dev)
    l2_bytes = max(args.l2_mb * 1e6, detected_l2 or 0)
    _status(f"{dev.backend} on {dev.info.name}; {len(specs)} case(s); copy ceiling ...")
    ceiling = copy_ceiling(dev, args.copy_mb, args.iters, args.warmup)
    cgbps = ceiling.get("gbps")
    _status(f"copy ceiling {cgbps:.1f} GB/s ({ceiling['method']})" if cgbps else ceiling["note"])
    rows, kernels = _run_cases(ctx, op, specs, cgbps, l2_bytes)
    ctx.release()
    ct = None
    if args.compile_times:
        from .compile_times import compile_times  # its module is also the child's entry point

        _status("compile times (cold, warm) in fresh processes ...")
        try:
            ct = compile_times(dev, args.device, kernels)
        except Exception as e:
            ct = {"kernels": [], "note": f"compile timing failed: {type(e).__name__}: {e}"}
    rep = {
        "tool": "qkgen bench",
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": report.command_line(args),
        "backend": dev.backend,
        "device": {"name": dev.info.name, "index": dev.info.index, "kind": dev.info.kind,
                   "platform": dev.info.platform, "line": dev.info.line()},  # fmt: skip
        "host": platform.node(),
        "versions": report.versions(),
        "copy_ceiling": ceiling,
        "settings": {"op": args.op, "iters": args.iters, "warmup": args.warmup, "l2_bytes": l2_bytes,
                     "l2_bytes_device": detected_l2, "l2_factor": L2_FACTOR, "max_mem_gb": args.max_mem_gb,
                     "seed": args.seed, "shapes": args.shapes_text, "formats": args.formats_text,
                     "dtypes": args.dtypes_text, "modes": list(args.modes), "timing": ctx.timing,
                     "timing_label": timing.LABELS[ctx.timing], "timing_note": ctx.timing_note,
                     "launches": args.launches, "host_calls": args.host_calls,
                     "host_warmup": timing.HOST_WARMUP, "llamacpp": args.llamacpp,
                     **({"m": args.ms} if args.op == "gemv" else {})},  # fmt: skip
        "formulas": {op.name: op.formula},
        "notes": ctx.notes,
        "skipped": skipped,
        "rows": [asdict(r) for r in rows],
        "compile_times": ct,
    }
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(rep, indent=1) + "\n")
    md = report.markdown(rep)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(md)
    if args.plot:
        report.plot(rep, Path(args.plot))
    sys.stdout.write(md)
    print(f"\nwrote {out_json} and {out_md}" + (f" and {args.plot}" if args.plot else ""))
    return 0 if all(r.status == "ok" for r in rows) and rows else 1
