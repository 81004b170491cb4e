"""llama.cpp rows: ggml's test-backend-ops in perf mode, run once per format / shape / M and parsed.

qkgen's y = x @ W.T with W [N, K] and x [M, K] is ggml's MUL_MAT with m = N, k = K, n = M (src0 the
quantized weight of type_a, src1 the f32 activations, type_b=f32). The command is

    PATH perf -o MUL_MAT -b CUDA0 -p "^type_a=q4_0,type_b=f32,m=4096,n=1,k=14336,"

and its console line (tests/test-backend-ops.cpp, print_perf_console) reads

    "  MUL_MAT(type_a=q4_0,...,src_overlap=0):" + padding + "    %8d runs - %8.2f us/run - " + flops / GB/s

test-backend-ops adds the same node n_runs times to one ggml graph, computes it until a second has
passed, and reports wall time / runs over the same buffers: a "hot" figure (the weights may stay in
L2), compared with qkgen's hot rows. Its perf cases for MUL_MAT with quantized type_a are m = 4096,
k = 14336 and n in 1, 2, 3, 4, 5, 8, 512; other shapes print nothing and give no row.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from qkgen.errors import QKGenError, QKGenValueError

TIMING = ("test-backend-ops perf: wall time of a ggml graph of n_runs MUL_MAT nodes on one set of buffers "
          "/ n_runs")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PERF_LINE = re.compile(r"^\s*(?P<op>[A-Z0-9_]+)\((?P<params>.*)\):\s+(?P<runs>\d+) runs - "
                       r"\s*(?P<us>[0-9.]+) us/run")
UNSUPPORTED = re.compile(r"^\s*(?P<op>[A-Z0-9_]+)\((?P<params>.*)\):\s+not supported")
DEVICE_LINE = re.compile(r"^\s*Device description:\s*(?P<desc>.+?)\s*$")
TIMEOUT_S = 300


@dataclass
class PerfResult:
    op: str
    params: str  # "type_a=q4_0,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],..."
    supported: bool
    runs: int = 0
    us_per_run: float | None = None

    def param(self, name: str) -> str | None:
        m = re.search(rf"(?:^|,){re.escape(name)}=([^,\[]+|\[[^\]]*\])", self.params)
        return m.group(1) if m else None


def parse_perf(text: str) -> tuple[list[PerfResult], str]:
    """(every perf result line of a test-backend-ops console output, the device description)."""
    out: list[PerfResult] = []
    device = ""
    for raw in text.splitlines():
        line = ANSI.sub("", raw)
        if m := PERF_LINE.match(line):
            out.append(PerfResult(m["op"], m["params"], True, int(m["runs"]), float(m["us"])))
        elif m := UNSUPPORTED.match(line):
            out.append(PerfResult(m["op"], m["params"], False))
        elif (m := DEVICE_LINE.match(line)) and not device:
            device = m["desc"]
    return out, device


def params_prefix(type_a: str, m: int, n: int, k: int) -> str:
    """ggml's vars() prefix of the plain MUL_MAT case: y [n, m] = x [n, k] @ W[m, k].T."""
    return f"type_a={type_a},type_b=f32,m={m},n={n},k={k},"


def command(path: str, backend: str, type_a: str, m: int, n: int, k: int) -> list[str]:
    return [path, "perf", "-o", "MUL_MAT", "-b", backend, "-p", "^" + params_prefix(type_a, m, n, k)]


def pick(results: list[PerfResult], type_a: str, m: int, n: int, k: int) -> PerfResult | None:
    """The MUL_MAT result of exactly (type_a, f32, m, n, k); of several, the plain one (no batch,
    no permutation, no view)."""
    pre = params_prefix(type_a, m, n, k)
    hits = [r for r in results if r.op == "MUL_MAT" and (r.params + ",").startswith(pre)]
    plain = [r for r in hits if r.param("bs") in (None, "[1,1]") and r.param("nr") in (None, "[1,1]")
             and r.param("per") in (None, "[0,1,2,3]") and r.param("k_v") in (None, "0")]  # fmt: skip
    return (plain or hits or [None])[0]


def check_binary(path: str) -> str:
    """The path of an executable test-backend-ops (--llamacpp), or a QKGenValueError."""
    p = Path(path)
    if not p.is_file() or not os.access(p, os.X_OK):
        raise QKGenValueError(f"--llamacpp: {path} is not an executable file; allowed: the path of "
                              "llama.cpp's test-backend-ops binary (ggml's tests/test-backend-ops.cpp)")
    return str(p)


def default_backend(backend: str, index: int) -> str:
    """ggml's backend name for qkgen's device: CUDA<index>, SYCL<index>, or OpenCL."""
    return {"cuda": f"CUDA{index}", "sycl": f"SYCL{index}"}.get(backend, "OpenCL")


def run(path: str, backend: str, type_a: str, m: int, n: int, k: int, timeout: float = TIMEOUT_S) -> dict:
    """One test-backend-ops perf run for MUL_MAT(type_a, f32, m, n, k): {"us_hot", "runs", "kernel",
    "timing", "note", "command"}; {"missing": why} where it has no such perf case; QKGenError when
    the binary fails."""
    cmd = command(path, backend, type_a, m, n, k)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise QKGenError(f"llama.cpp: {' '.join(cmd)}: {type(e).__name__}: {e}") from None
    results, device = parse_perf(p.stdout)
    r = pick(results, type_a, m, n, k)
    if p.returncode != 0 and r is None:
        tail = " | ".join((p.stderr or p.stdout).strip().splitlines()[-2:])
        raise QKGenError(f"llama.cpp: {' '.join(cmd)} exited with {p.returncode}: {tail}")
    shown = " ".join(cmd[:-1] + [f'"{cmd[-1]}"'])
    if r is None:
        return {"missing": f"test-backend-ops has no perf case MUL_MAT({params_prefix(type_a, m, n, k)}...) "
                           f"on {backend} (`{shown}` printed none)"}  # fmt: skip
    if not r.supported:
        return {"missing": f"test-backend-ops: MUL_MAT({r.params}) not supported on {backend}"}
    note = f"`{shown}`; {r.runs} runs" + (f"; ggml device: {device}" if device else "")
    return {"us_hot": r.us_per_run, "runs": r.runs, "kernel": f"ggml MUL_MAT({r.params})", "timing": TIMING,
            "note": note, "command": shown}  # fmt: skip
