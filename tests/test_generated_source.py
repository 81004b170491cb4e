"""Generated source a reviewer enjoys reading: every kernel of every op, for every target profile
(what `qkgen dump --all --target T` writes, plus the GEMVs without the fast decode), obeys the
layout rules below. Each failure names the file (profile/filename) and the line."""

from __future__ import annotations

import re
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest

from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.tools.catalog import variants

MAX_COLUMNS = 120

# Leftovers of mechanical generation, in code (comments excluded).
LEFTOVERS = {
    "`* 1`": re.compile(r"\* 1u?(?![\w.])"),
    "`/ 1`": re.compile(r"/ 1u?(?![\w.])"),
    "`>> 0`": re.compile(r">> 0u?(?![\w.])"),
    "`<< 0`": re.compile(r"<< 0u?(?![\w.])"),
    "`+ 0`": re.compile(r"[+-] 0u?(?![\w.])"),
    # not after a call's name, an index, a template argument, an asm operand's constraint ("r"(a)), nor `if`
    "a parenthesized name as an operand, `(i) / 2u`": re.compile(r"(?<![\w\]>\"])(?<!if )\("
                                                                  r"(?!(?:u?char|u?short|u?int|float|half|size_t)\))"
                                                                  r"\w+\)(?! *[\w(*])"),
    "double parentheses around a name": re.compile(r"\(\((\w+)\)\)"),
}

# Magic constants and tricks: a line using one needs a comment on it, or the run of such lines it
# belongs to needs one on the line above the run.
MAGIC = {
    "the f16 fast int -> float decode (0x6400)": re.compile(r"0x6400"),
    "the f32 fast int -> float decode (0x4B000000)": re.compile(r"0x4B000000", re.IGNORECASE),
    "a bf16 rounding constant": re.compile(r"0x7fff|0x7f800000|\| 0x40u"),
    "a 32-bit mask": re.compile(r"\b0x[0-9a-fA-F]{8}u"),
    "the signed-code trick (q ^ 2^(bits-1))": re.compile(r"\^ \d+u"),
    "the q8_1 sum fold (* s_x)": re.compile(r"\* sx\b"),
    "a byte sign extension ((int)(char))": re.compile(r"\(int\)\(char\)"),
}

HEX_FLOAT = re.compile(r"(?<![\w.])-?(?:0x[0-9a-f]+(?:\.[0-9a-f]+)?p[+-]\d+|0\.0)f")
TABLE_START = re.compile(r"\bfloat \w+\[\d+\] = \{$")
HELPER_DEF = re.compile(r"^[A-Za-z_].*\b(qk_\w+)\(.*\{")


def _kernels():
    for v in variants(None):
        yield v
        if v["op"] == "gemv":
            yield {**v, "fast_decode": False}


@lru_cache(maxsize=None)
def _sources(profile: str) -> tuple[tuple[str, str], ...]:
    out = []
    for v in _kernels():
        v = dict(v)
        ks = render(v.pop("op"), v.pop("format"), profile, **v)
        out.append((f"{profile}/{ks.filename}" + ("" if v.get("fast_decode", True) else " (fast_decode=0)"), ks.source))
    return tuple(out)


def _code_parts(lines: list[str]) -> list[str]:
    """Each line without its comments (/* ... */ spanning lines too)."""
    out, in_comment = [], False
    for line in lines:
        code, rest = "", line
        while rest:
            if in_comment:
                end = rest.find("*/")
                if end < 0:
                    rest = ""
                else:
                    rest, in_comment = rest[end + 2 :], False
            else:
                start = rest.find("/*")
                if start < 0:
                    code, rest = code + rest, ""
                else:
                    code, rest, in_comment = code + rest[:start], rest[start + 2 :], True
        out.append(code)
    return out


def problems(name: str, source: str) -> list[str]:
    """Every rule broken by one generated file, as `name:line: what`."""
    bad = []
    lines = source.split("\n")
    assert lines[-1] == "", f"{name}: must end with exactly one newline"
    lines = lines[:-1]
    code = _code_parts(lines)
    has_comment = [c != line for c, line in zip(code, lines)]

    def at(i: int, what: str) -> None:
        bad.append(f"{name}:{i + 1}: {what}\n    {lines[i]}")

    for i, line in enumerate(lines):
        if line != line.rstrip():
            at(i, "trailing whitespace" if line.strip() else "an empty line with indentation")
        if len(line) > MAX_COLUMNS:
            at(i, f"{len(line)} columns (at most {MAX_COLUMNS})")
        if "\t" in line:
            at(i, "a tab")
        if i and not line.strip() and not lines[i - 1].strip():
            at(i, "two blank lines in a row")
        for what, rx in LEFTOVERS.items():
            if rx.search(code[i]):
                at(i, f"leftover {what}")

    # Magic constants: a comment on the line, on a line of its run, or on the line above the run.
    for what, rx in MAGIC.items():
        i = 0
        while i < len(lines):
            if not rx.search(code[i]):
                i += 1
                continue
            j = i
            while j + 1 < len(lines) and rx.search(code[j + 1]):
                j += 1
            if not (any(has_comment[i : j + 1]) or (i and has_comment[i - 1])):
                at(i, f"{what} without a comment on its line or the line above")
            i = j + 1

    # Constant tables: shortest exact hex literals, each line with its decimal float32 values.
    in_table = False
    for i, line in enumerate(code):
        if TABLE_START.search(line):
            in_table = True
            continue
        if line.strip() == "};":
            in_table = False
        lits = HEX_FLOAT.findall(line)
        if not (in_table or any("x" in lit for lit in lits)):
            continue
        for lit in lits:
            mant = lit.split("p")[0]
            if "." in mant and mant.endswith("0"):
                at(i, f"hex literal {lit} is not in its shortest form")
        m = re.search(r"/\*(.*)\*/", lines[i])
        if not m:
            at(i, "a table line without its decimal values in a comment")
            continue
        decs = m.group(1).split()
        vals = [float.fromhex(x[:-1]) if "x" in x else float(x[:-1]) for x in lits]
        if len(decs) != len(vals) or any(np.float32(d) != np.float32(v) for d, v in zip(decs, vals)):
            at(i, "the decimal comment does not match the hex values")

    # Helpers: every qk_* function defined is called.
    for i, line in enumerate(lines):
        m = HELPER_DEF.match(line)
        if m:
            helper = m.group(1)
            calls = sum(len(re.findall(rf"\b{helper}\(", c)) for k, c in enumerate(code) if k != i)
            if not calls:
                at(i, f"helper {helper} is defined but never used")
    return bad


def assert_read_well(profile: str, kss) -> None:
    """No problems() in any of the KernelSources rendered for `profile` (the first 20 shown)."""
    bad = [p for ks in kss for p in problems(f"{profile}/{ks.filename}", ks.source)]
    assert not bad, f"{len(bad)} problems, the first 20:\n" + "\n".join(bad[:20])


@pytest.mark.parametrize("profile", list(PROFILES))
def test_generated_source_reads_well(profile):
    sources = _sources(profile)
    assert len(sources) > 100
    bad = [p for name, src in sources for p in problems(name, src)]
    if bad:
        pytest.fail(f"{len(bad)} problems, the first 20:\n" + "\n".join(bad[:20]))


def test_only_used_helpers_and_headers():
    """A kernel without bf16 has no bf16 helper and (CUDA) no cuda_bf16.h; no sub-group
    reduction, no qk_warp_sum."""
    f32 = render("dequantize", "q4_0", "cuda-sm90", dtype="f32").source
    assert "qk_f32_to_bf16" not in f32 and "cuda_bf16.h" not in f32 and "qk_warp_sum" not in f32
    assert "qk_warp_sum(" in render("gemv", "q4_0", "cuda-sm90").source
    nv = render("gemv", "q4_0", "opencl-nvidia", dtype="f16").source
    assert "cl_khr_fp16 : enable" not in nv and "qk_half" not in nv and "0x4B000000u" in nv
    intel = render("gemv", "q4_0", "opencl-intel-gpu", dtype="f16").source
    assert "cl_khr_fp16 : enable" in intel and "qk_half(0x6400u | q)" in intel
    assert "qk_dot4_i8" not in render("gemv_int8dot", "q4_0", "opencl-intel-gpu").source


def test_the_checker_catches_each_rule():
    src = "\n".join([
        "/* header */",
        "inline float qk_unused(float x) { return x; }",
        "int a = b * 1u; ",
        "",
        "",
        "    ",
        "uint q = w[(i) / 2u] >> 0u;",
        "v = as_float(0x4B000000u | q) - 8388616.0f;",
        "x" * 121,
        "__constant float T[2] = {",
        "    -0x1.6473620000000p-1f, 0x1p+0f",
        "};",
    ]) + "\n"  # fmt: skip
    text = "\n".join(problems("f.cl", src))
    for what in ("never used", "leftover `* 1`", "trailing whitespace", "two blank lines", "indentation",
                 "leftover `>> 0`", "parenthesized name", "0x4B000000", "121 columns", "shortest form",
                 "without its decimal values"):  # fmt: skip
        assert what in text, what


def test_dump_all_writes_what_render_gives(tmp_path):
    """`qkgen dump --all` writes exactly the rendered sources checked above (one profile)."""
    profile = "opencl-nvidia"
    subprocess.run([sys.executable, "-m", "qkgen", "dump", "--all", "-o", str(tmp_path), "--target", profile],
                   check=True, capture_output=True)  # fmt: skip
    written = {p.name: p.read_text() for p in (tmp_path / profile).iterdir()}
    rendered = {name.split("/", 1)[1]: src for name, src in _sources(profile) if "fast_decode" not in name}
    assert written == rendered
