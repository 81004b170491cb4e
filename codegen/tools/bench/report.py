"""Report writers: the markdown summary (header, the table from `tables`, byte formulas, compile
times), the run's command line and versions that the JSON report records; the PNG chart is `plot`."""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
from pathlib import Path

import numpy as np

from qkgen.errors import QKGenError
from qkgen.version import __version__

from .harness import L2_FACTOR
from .plot import matplotlib_pyplot, plot  # noqa: F401  (main calls them through report)
from .tables import fmt_num, summary, table  # noqa: F401


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
        out += ["--m", ",".join(map(str, getattr(args, "ms", [args.m])))]
    if args.device is not None:
        out += ["--device", str(args.device)]
    modes = getattr(args, "modes", ("cold", "hot"))
    out += [f"--{m}" for m in modes] if len(modes) == 1 else []
    for opt in ("l2_mb", "max_mem_gb", "copy_mb", "launches", "host_calls", "timing", "llamacpp",
                "llamacpp_backend"):  # fmt: skip
        v = getattr(args, opt, None)
        if v is not None and not (opt == "timing" and v == "auto"):
            out += ["--" + opt.replace("_", "-"), format(v, "g") if isinstance(v, float) else str(v)]
    if getattr(args, "no_bnb", False):
        out.append("--no-bnb")
    return out


def versions() -> dict:
    out = {"qkgen": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("torch", "bitsandbytes", "pyopencl", "pycuda", "dpctl"):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = getattr(m, "__version__", getattr(m, "VERSION_TEXT", "?"))
    return out


def _header(report: dict) -> list[str]:
    c = report["copy_ceiling"]
    if c.get("gbps"):
        measured = ", ".join(f"{k} {v:.1f} GB/s" for k, v in c["all"].items())
        ceil_s = (f"{c['gbps']:.1f} GB/s ({c['method']}, {c['buffer_bytes'] / 2**20:.0f} MiB buffer, bytes "
                  f"read + written, median of {report['settings']['iters']}; measured: {measured})")
    else:
        ceil_s = c.get("note", "-")
    vers = ", ".join(f"{k} {v}" for k, v in report["versions"].items() if k != "qkgen")
    s = report["settings"]
    modes = s.get("modes", ["cold", "hot"])
    note = f" ({s['timing_note']})" if s.get("timing_note") else ""
    lines = [
        f"# qkgen bench: {report['backend']} on {report['device']['name']}",
        "",
        f"- date (UTC): {report['date_utc']}",
        f"- command: `{report['command']}`",
        f"- device: {report['device']['line']}",
        f"- qkgen {report['versions']['qkgen']}; {vers}",
        f"- copy ceiling: {ceil_s}",
        f"- device time: {s.get('timing_label', s.get('timing', '-'))}{note}; N = {s.get('launches', '-')} "
        f"launches per sample (cold: a whole number of passes over the sets); median of {s['iters']} samples "
        f"after every set ran once and {s['warmup']} untimed samples",
        f"- modes: {', '.join(modes)}; cold = the launches rotate over ceil({L2_FACTOR} * L2 / bytes per "
        f"set) + 1 sets (L2 = {s['l2_bytes'] / 1e6:.0f} MB, at most {s['max_mem_gb']} GiB of sets); hot = every "
        "launch on one set (how llama.cpp's test-backend-ops times)",
        f"- host µs/call: wall time of {s.get('host_calls', '-')} back-to-back public calls on device "
        f"arrays (after {s.get('host_warmup', '-')} untimed), synchronized once at the end, / the count",
    ]  # fmt: skip
    for op, formula in report["formulas"].items():
        lines.append(f"- bytes, {op}: {formula}; GB/s = bytes / median time; % copy = GB/s of the cold time "
                     "(hot where there is none: --hot, llama.cpp) / copy ceiling")  # fmt: skip
    return lines + [f"- note: {n}" for n in report["notes"]]


def _formulas(rows: list[dict]) -> list[str]:
    lines = ["", "Byte formulas (per case, one launch):", ""]
    seen: dict[tuple, set] = {}
    for r in rows:
        k = (r["op"], r["format"], r["variant"], r["dtype"], r["shape"]) + (() if r.get("m") is None else
                                                                           (f"M={r['m']}",))  # fmt: skip
        forms = seen.setdefault(k, set())
        if r["byte_formula"] not in forms:  # an impl that moves other bytes (dense torch) gets its own line
            who = f" ({r['impl']})" if forms else ""
            forms.add(r["byte_formula"])
            lines.append(f"- {' '.join(k)}{who}: {r['byte_formula']}")
    return lines


def _compile_times(report: dict) -> list[str]:
    ct = report.get("compile_times")
    if ct and ct.get("kernels"):
        lines = ["", f"Compile times ({report['backend']}; {ct['method']}):", "",
                 "| kernel | cold s | warm s |", "|---|---|---|"]  # fmt: skip
        lines += [f"| {k['kernel']} | {k['cold_s']:.3f} | {k['warm_s']:.3f} |" for k in ct["kernels"]]
        if ct.get("note"):
            lines.append(f"\nnote: {ct['note']}")
        return lines
    return ["", f"Compile times: {ct.get('note', '-')}"] if ct else []


def markdown(report: dict) -> str:
    rows = report["rows"]
    errors: list[str] = []
    top = summary(report)
    lines = [*_header(report), "", *top, *[""] * bool(top), *table(report, errors), *_formulas(rows),
             *_compile_times(report)]  # fmt: skip
    if report["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- {s}" for s in report["skipped"]]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {e}" for e in errors]
    return "\n".join(lines) + "\n"
