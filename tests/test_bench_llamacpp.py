"""llama.cpp rows: the parser of test-backend-ops' perf output (the format of print_perf_console in
ggml's tests/test-backend-ops.cpp), the command, and a bench run with a stand-in binary that prints
that format."""

import json
import os
import stat

import pytest

from qkgen.errors import QKGenError, QKGenValueError
from qkgen.tools.bench import llamacpp

from .test_bench import _intel_cpu, run_bench

PARAMS = "type_a={t},type_b=f32,m=4096,n={n},k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1,src_overlap=0"


def perf_line(op: str, params: str, runs: int, us: float, flops: float) -> str:
    """One line as print_perf_console prints it: name, alignment padding, runs, us/run, FLOPs (ANSI)."""
    head = f"  {op}({params}): "
    last = (len(head) + 7) // 8 * 8
    if last - len(head) < 5:
        last += 8
    per_run = flops * us / 1e6

    def fl(f):
        for unit, scale in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
            if f >= scale:
                return f"{f / scale:6.2f} {unit}"
        return f"{f / 1e3:6.2f} kFLOP"

    return (head + " " * (last - len(head)) + f"    {runs:8d} runs - {us:8.2f} us/run - "
            f"{fl(per_run)}/run - \x1b[1;34m{fl(flops)}S\x1b[0m")  # fmt: skip


SAMPLE = "\n".join([
    "Testing 2 devices", "",
    "Backend 1/2: CUDA0",
    "  Device description: NVIDIA H100 80GB HBM3",
    "  Device memory: 81079 MB (80534 MB free)", "",
    perf_line("MUL_MAT", PARAMS.format(t="q4_0", n=1), 6817, 14.83, 117.44e6 / 14.83e-6),
    perf_line("MUL_MAT", PARAMS.format(t="q4_0", n=8), 2924, 34.23, 939.52e6 / 34.23e-6),
    "  MUL_MAT(" + PARAMS.format(t="iq1_m", n=1) + "): not supported",
    "  Backend CUDA0: \x1b[1;32mOK\x1b[0m",
    "Backend 2/2: CPU", "  Skipping CPU backend",
    "2/2 backends passed", "\x1b[1;32mOK\x1b[0m",
])  # fmt: skip


def test_parser_reads_print_perf_console():
    results, device = llamacpp.parse_perf(SAMPLE)
    assert device == "NVIDIA H100 80GB HBM3"
    assert [(r.op, r.supported, r.runs, r.us_per_run) for r in results] == [
        ("MUL_MAT", True, 6817, 14.83), ("MUL_MAT", True, 2924, 34.23), ("MUL_MAT", False, 0, None)]  # fmt: skip
    assert results[0].params == PARAMS.format(t="q4_0", n=1)
    assert results[0].param("n") == "1" and results[0].param("bs") == "[1,1]" and results[0].param("k") == "14336"
    r = llamacpp.pick(results, "q4_0", 4096, 8, 14336)
    assert r.us_per_run == 34.23
    assert llamacpp.pick(results, "q4_0", 4096, 2, 14336) is None  # n=2 is not n=1 nor n=8
    assert llamacpp.pick(results, "q4_1", 4096, 1, 14336) is None
    # the GB/s form (ops without flops) parses too
    gb = "  CPY(type_src=f32,type_dst=f16,ne=[512,3072,1,1]):    8192 runs -     3.21 us/run -  9216 kB/run - " \
         "\x1b[1;34m 2737.55 GB/s\x1b[0m"
    assert llamacpp.parse_perf(gb)[0][0].us_per_run == 3.21


def test_command_maps_gemv_to_mul_mat():
    # qkgen's W [N, K], x [M, K] is ggml's MUL_MAT m = N, k = K, n = M
    cmd = llamacpp.command("/x/test-backend-ops", "CUDA0", "q5_1", 4096, 8, 14336)
    assert cmd == ["/x/test-backend-ops", "perf", "-o", "MUL_MAT", "-b", "CUDA0", "-p",
                   "^type_a=q5_1,type_b=f32,m=4096,n=8,k=14336,"]  # fmt: skip
    assert llamacpp.default_backend("cuda", 1) == "CUDA1" and llamacpp.default_backend("sycl", 0) == "SYCL0"


FAKE = """#!/bin/sh
# a stand-in for test-backend-ops: prints one perf line for the -p prefix it is given
while [ $# -gt 0 ]; do [ "$1" = "-p" ] && P="$2"; shift; done
P="${P#^}"
case "$P" in *m=999,*) echo "Backend 1/1: CUDA0"; exit 0;; *fail*) echo "boom" >&2; exit 3;; esac
echo "Backend 1/1: OpenCL"
echo "  Device description: stand-in"
printf '  MUL_MAT(%sbs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1,src_overlap=0):     ' "$P"
printf '    %8d runs - %8.2f us/run -  1.00 GFLOP/run - \\033[1;34m 1.00 TFLOPS\\033[0m\\n' 100 12.5
"""


def _fake(tmp_path):
    path = tmp_path / "test-backend-ops"
    path.write_text(FAKE)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_run_with_a_stand_in_binary(tmp_path):
    exe = _fake(tmp_path)
    res = llamacpp.run(exe, "OpenCL", "q4_0", 256, 3, 512)
    assert res["us_hot"] == 12.5 and res["runs"] == 100 and "stand-in" in res["note"]
    assert res["kernel"].startswith("ggml MUL_MAT(type_a=q4_0,type_b=f32,m=256,n=3,k=512,")
    assert "missing" in llamacpp.run(exe, "OpenCL", "q4_0", 999, 1, 512)  # prints no case: no row
    with pytest.raises(QKGenError, match="exited with 3"):
        llamacpp.run(exe, "OpenCL", "fail", 1, 1, 32)


def test_cli_checks_the_binary(tmp_path):
    with pytest.raises(QKGenValueError, match="--llamacpp: .* is not an executable file"):
        run_bench(["--op", "gemv", "--llamacpp", str(tmp_path / "nope")])
    exe = _fake(tmp_path)
    with pytest.raises(QKGenValueError, match="allowed with --op gemv"):
        run_bench(["--op", "dequantize", "--llamacpp", exe])
    with pytest.raises(QKGenValueError, match="--llamacpp-backend: needs --llamacpp"):
        run_bench(["--op", "gemv", "--llamacpp-backend", "CUDA0"])


def test_bench_adds_llamacpp_rows_beside_qkgen(tmp_path):
    dev = _intel_cpu()
    if dev is None:
        pytest.skip("needs Intel's CPU OpenCL runtime")
    exe = _fake(tmp_path)
    out_json, out_md = tmp_path / "l.json", tmp_path / "l.md"
    rc = run_bench(["--op", "gemv", "--backend", "opencl", "--device", dev.platform, "--shapes", "256x512",
                    "--formats", "q4_0,nf4", "--dtypes", "f16,bf16", "--m", "1,2", "--hot", "--iters", "2",
                    "--warmup", "0", "--l2-mb", "1", "--launches", "4", "--host-calls", "3", "--copy-mb", "16",
                    "--no-compile-times", "--llamacpp", exe, "--json", str(out_json),
                    "--markdown", str(out_md)])  # fmt: skip
    assert rc == 0
    rep = json.loads(out_json.read_text())
    assert rep["settings"]["modes"] == ["hot"] and rep["settings"]["llamacpp"] == exe
    assert "--hot" in rep["command"] and "--llamacpp" in rep["command"]
    ll = [r for r in rep["rows"] if r["impl"] == "llama.cpp"]
    assert [(r["format"], r["m"], r["dtype"]) for r in ll] == [("q4_0", 1, "f32"), ("q4_0", 2, "f32")]  # not nf4
    for r in ll:
        assert r["us_hot"] == 12.5 and r["us_cold"] is None and r["primary"] == "hot" and r["pct_copy_hot"] > 0
        assert r["bytes"] == 4096 * 18 + r["m"] * 512 * 4 + r["m"] * 256 * 4  # x and y f32
        assert r["timing"] == llamacpp.TIMING and "stand-in" in r["note"]
    for r in rep["rows"]:
        assert r["us_cold"] is None and r["us_hot"] > 0 and r["sets"] == (0 if r["impl"] == "llama.cpp" else 1)
    md = out_md.read_text()
    assert "| q4_0 | - | f32 | 256x512 | 1 | llama.cpp | `ggml MUL_MAT(type_a=q4_0,type_b=f32,m=256,n=1,k=512," in md
    line = next(x for x in md.splitlines() if "| llama.cpp |" in x)
    assert "| 12.5 | - |" in line and "(hot) |" in line and "x (qkgen" in line


@pytest.mark.skipif(not os.environ.get("QKGEN_TBO"), reason="set QKGEN_TBO to a real test-backend-ops binary")
def test_real_binary():
    res = llamacpp.run(os.environ["QKGEN_TBO"], os.environ.get("QKGEN_TBO_BACKEND", "CUDA0"), "q4_0", 4096, 1, 14336)
    assert res.get("us_hot", 0) > 0, res
