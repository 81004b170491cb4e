"""Report writers: the markdown summary, the PNG bar chart, and the run's command line and versions
that the JSON report records."""

from __future__ import annotations

import argparse
import platform
import shlex
import sys
from pathlib import Path

import numpy as np

from qkgen.errors import QKGenError
from qkgen.version import __version__

from .cases import CASES
from .harness import L2_FACTOR


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


def versions() -> dict:
    out = {"qkgen": __version__, "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("torch", "bitsandbytes", "pyopencl", "pycuda", "dpctl"):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = getattr(m, "__version__", getattr(m, "VERSION_TEXT", "?"))
    return out


def fmt_num(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


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
    lines = [
        f"# qkgen bench: {report['backend']} on {report['device']['name']}",
        "",
        f"- date (UTC): {report['date_utc']}",
        f"- command: `{report['command']}`",
        f"- device: {report['device']['line']}",
        f"- qkgen {report['versions']['qkgen']}; {vers}",
        f"- copy ceiling: {ceil_s}",
        f"- timing: device events; median of {s['iters']} launches after every set ran once and "
        f"{s['warmup']} warm-up launches; rotation over ceil({L2_FACTOR} * L2 / bytes per set) + 1 sets "
        f"(L2 = {s['l2_bytes'] / 1e6:.0f} MB, at most {s['max_mem_gb']} GiB of sets)",
    ]  # fmt: skip
    for op, formula in report["formulas"].items():
        lines.append(f"- bytes, {op}: {formula}; GB/s = bytes / median time; % copy = GB/s / copy ceiling")
    return lines + [f"- note: {n}" for n in report["notes"]]


def _default_table(rows: list[dict], errors: list[str]) -> list[str]:
    """One line per case, one column group per implementation beside qkgen."""
    impls = [i for i in dict.fromkeys(r["impl"] for r in rows) if i != "qkgen"]
    head = ["op", "format", "variant", "dtype", "shape", "MB moved", "sets",
            "qkgen µs", "qkgen GB/s", "qkgen % copy"]  # fmt: skip
    for i in impls:
        head += [f"{i} µs", f"{i} GB/s", f"{i} % copy", f"{i} = qkgen", f"qkgen speed-up vs {i}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        groups.setdefault((r["op"], r["format"], r["variant"], r["dtype"], r["shape"]), {})[r["impl"]] = r

    def cells(r: dict | None) -> list[str]:
        if r is None:
            return ["-", "-", "-"]
        if r["status"] != "ok":
            errors.append(f"{r['impl']} {r['format']} {r['variant']} {r['dtype']} {r['shape']}: {r['error']}")
            return ["error", "-", "-"]
        return [fmt_num(r["us_median"], ".1f"), fmt_num(r["gbps"], ".1f"), fmt_num(r["pct_copy"], ".1f")]

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
    return lines


def _formulas(rows: list[dict]) -> list[str]:
    lines = ["", "Byte formulas (per case, one launch):", ""]
    seen: dict[tuple, set] = {}
    for r in rows:
        k = (r["op"], r["format"], r["variant"], r["dtype"], r["shape"])
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
    op_obj = CASES.get(report["settings"].get("op", ""))
    custom = op_obj.markdown_table(rows) if op_obj is not None else None
    if custom is not None:
        table, errors = custom
    else:
        errors = []
        table = _default_table(rows, errors)
    lines = [*_header(report), "", *table, *_formulas(rows), *_compile_times(report)]
    if report["skipped"]:
        lines += ["", "Skipped:", ""] + [f"- {s}" for s in report["skipped"]]
    if errors:
        lines += ["", "Errors:", ""] + [f"- {e}" for e in errors]
    return "\n".join(lines) + "\n"


def matplotlib_pyplot():
    """matplotlib.pyplot on the Agg backend, or a QKGenError saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise QKGenError(f"--plot needs matplotlib ({e}); pip install 'qkgen[bench]' or matplotlib") from None
    return plt


def plot(report: dict, path: Path) -> None:
    plt = matplotlib_pyplot()
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
