"""The markdown table: one line per row (impl, kernel, device µs hot and cold, % copy, host µs per
call, check, time against qkgen), headed by the device, the date and the exact command."""

from __future__ import annotations

from .harness import CHECK_REL_TOL

HEAD = ["format", "variant", "dtype", "shape", "M", "impl", "kernel", "MB moved", "sets",
        "device µs (hot)", "device µs (cold)", "% copy", "host µs/call", "check", "vs qkgen"]  # fmt: skip
FOOT = ("vs qkgen: the row's time over qkgen's in the same mode (> 1: qkgen is faster); baselines "
        "and qkgen int8dot over the case's qkgen float row, llama.cpp (hot, x f32) over the fastest hot "
        "qkgen row of its format, shape and M (any path or dtype), named in the cell. check: relative "
        "error vs the reference (gemv: the float64 product on sampled rows; dequantize: the reference "
        "codec; exact = bit-equal), "
        f"allowed < {CHECK_REL_TOL:g}.")  # fmt: skip


def fmt_num(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _who(r: dict) -> str:
    m = "" if r.get("m") is None else f" M={r['m']}"
    return f"{r['impl']} {r['format']} {r['variant']} {r['dtype']} {r['shape']}{m}"


def check_cell(r: dict) -> str:
    cells = []
    if r.get("rel_err") is not None:
        cells.append(f"{r['check']} ({'exact' if r['rel_err'] == 0 else format(r['rel_err'], '.2g')})")
    if r.get("bit_equal_to_qkgen") is not None:
        cells.append("bit-equal to qkgen" if r["bit_equal_to_qkgen"] else
                     f"max diff vs qkgen {r['max_abs_diff_vs_qkgen']:.3g}")  # fmt: skip
    return "; ".join(cells) or "-"


def vs_qkgen(r: dict, rows: list[dict]) -> str:
    """The row's time over qkgen's in the same mode (cold first); see FOOT."""
    if r["impl"] == "qkgen" or r["status"] != "ok":
        return "-"
    key = ("format", "variant", "shape", "m")
    same = [q for q in rows if q["status"] == "ok" and q["impl"].startswith("qkgen")
            and all(q.get(k) == r.get(k) for k in key)]  # fmt: skip
    if r["impl"] == "llama.cpp":
        hot = [q for q in same if q.get("us_hot")]
        if not hot or not r.get("us_hot"):
            return "-"
        q = min(hot, key=lambda q: q["us_hot"])
        return f"{r['us_hot'] / q['us_hot']:.2f}x ({q['impl']} {q['dtype']})"
    q = next((q for q in same if q["impl"] == "qkgen" and q["dtype"] == r["dtype"]), None)
    for mode in ("cold", "hot"):
        if q is not None and r.get(f"us_{mode}") and q.get(f"us_{mode}"):
            return f"{r[f'us_{mode}'] / q[f'us_{mode}']:.2f}x"
    return "-"


def _us(r: dict, mode: str, mark: str) -> str:
    if r["status"] != "ok":
        return "error"
    v = r.get(f"us_{mode}")
    return "-" if v is None else f"{v:.1f}{mark}"


def table(report: dict, errors: list[str]) -> list[str]:
    """The table lines (caption, header, one line per row, footnotes); error lines go to `errors`."""
    rows, run_timing = report["rows"], report["settings"].get("timing")
    caption = f"{report['device']['name']} ({report['backend']}), {report['date_utc']}: `{report['command']}`"
    lines = [caption, "", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    marks: list[str] = []
    host_notes: dict[str, int] = {}
    for r in rows:
        mark = ""
        if r["status"] == "ok" and r.get("timing") and r["timing"] != run_timing and r["impl"] != "llama.cpp":
            mark = "†"
            marks.append(f"† {_who(r)}: per-launch events ({r.get('timing_note') or r['timing']})")
        if r["status"] != "ok":
            errors.append(f"{_who(r)}: {r['error']}")
        pct = fmt_num(r.get("pct_copy"), ".1f")
        if r.get("pct_copy") is not None and r.get("primary") == "hot":
            pct += " (hot)"
        host = fmt_num(r.get("host_us_per_call"), ".1f")
        if r.get("host_us_per_call") is None and r.get("host_note"):
            host = "n/a"
            host_notes[r["host_note"]] = host_notes.get(r["host_note"], 0) + 1
        impl = r["impl"] + (f" ({r['path']})" if r.get("path") and r["path"] != "float" and
                            r["path"] not in r["impl"] else "")  # fmt: skip
        impl += " [default]" if r.get("default") and r["op"] == "gemv" else ""
        m = "-" if r.get("m") is None else str(r["m"])
        kernel = f"`{r['kernel']}`" if r["kernel"] else "-"
        mb = f"{r['bytes'] / 1e6:.2f}"
        cells = [r["format"], r["variant"], r["dtype"], r["shape"], m, impl, kernel, mb, str(r["sets"] or "-"), _us(r, "hot", mark), _us(r, "cold", mark), pct, host, check_cell(r),
                 vs_qkgen(r, rows)]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", FOOT]
    if marks:
        lines += [""] + [f"- {m}" for m in marks]
    return lines + [""] * bool(host_notes) + [f"- host µs/call n/a ({n} row{'s' * (n > 1)}): {why}"
                                              for why, n in host_notes.items()]  # fmt: skip


SUMMARY_HEAD = ["format", "variant", "dtype", "shape", "M", "qkgen default", "µs cold", "µs hot", "% copy",
                "host µs/call", "fastest qkgen row", "bnb", "torch dense", "llama.cpp (hot)"]  # fmt: skip
SUMMARY_FOOT = ("One line per case: the row the public call takes when not told a path ([default] in the "
                "table below), its device time, % copy and host time; then each other side's time (cold; "
                "llama.cpp hot, its own timer, x f32) and, in brackets, that time over the default row's in the "
                "same mode (> 1: qkgen's default is faster). The fastest qkgen row is named where it is not the "
                "default.")  # fmt: skip


def _against(other: dict | None, base: dict, mode: str) -> str:
    """`other`'s time in `mode` and, in brackets, that time over `base`'s."""
    key = f"us_{mode}"
    if other is None or base.get(key) is None:
        return "-"
    if other["status"] != "ok":
        return "error"
    return "-" if other.get(key) is None else f"{other[key]:.1f} ({other[key] / base[key]:.2f}x)"


def summary(report: dict) -> list[str]:
    """The headline table: qkgen's default row of each case against the fastest qkgen row, bitsandbytes,
    dense torch and llama.cpp (see SUMMARY_FOOT); a default row that failed says "error" in its time
    cells. [] when no row is marked default."""
    rows = report["rows"]
    case = ("op", "format", "variant", "shape", "m")
    lines = []
    for d in (r for r in rows if r.get("default")):
        same = [r for r in rows if all(r.get(k) == d.get(k) for k in case)]
        mine = [r for r in same if r["dtype"] == d["dtype"]]

        def first(impl: str, among: list[dict] = mine) -> dict | None:
            return next((r for r in among if r["impl"] == impl), None)

        timed = [r for r in mine if r["impl"].startswith("qkgen") and r["status"] == "ok" and r.get("us_cold")]
        best = min(timed, key=lambda r: r["us_cold"]) if timed else d
        fastest = "the default" if best is d else f"{best['impl']}: {best['us_cold']:.1f}"
        m = "-" if d.get("m") is None else str(d["m"])
        times = [_us(d, "cold", ""), _us(d, "hot", ""), fmt_num(d.get("pct_copy"), ".1f"),
                 fmt_num(d.get("host_us_per_call"), ".1f")]  # fmt: skip
        cells = [d["format"], d["variant"], d["dtype"], d["shape"], m, d.get("path") or "-", *times, fastest,
                 _against(first("bnb"), d, "cold"), _against(first("torch"), d, "cold"),
                 _against(first("llama.cpp", same), d, "hot")]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    if not lines:
        return []
    head = ["| " + " | ".join(SUMMARY_HEAD) + " |", "|" + "---|" * len(SUMMARY_HEAD)]
    return ["## Summary: the default path against the others", "", *head, *lines, "", SUMMARY_FOOT]
