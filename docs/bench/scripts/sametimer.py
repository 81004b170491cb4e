"""qkgen and llama.cpp's MUL_MAT timed by one timer: Nsight Compute's gpu__time_duration of every
kernel an op launches (x -> q8_1, then the product), summed per op; both sides hot (the same
buffers every launch, caches not flushed: --cache-control none) at the GPU's own clocks
(--clock-control none). llama.cpp: test-backend-ops perf (f32 activations); qkgen: public
qkgen.gemv calls with f32 x on the default path (or the path named). The median over the profiled
launches of each kernel. argv[1]: output JSON; argv[2]: test-backend-ops binary; argv[3]: cases
type:n[:path],... (ggml type names, e.g. q4_0:1,q4_K:8,mxfp4:1:int8dot); m = 4096, k = 14336."""
import csv, io, json, statistics, subprocess, sys

NCU = ["ncu", "--csv", "--metrics", "gpu__time_duration.sum", "--cache-control", "none", "--clock-control", "none"]
M, K = 4096, 14336
SKIP, COUNT = 12, 24  # launches of the op's kernels skipped (warm-up), then profiled


def profile(cmd: list[str], kernels: str) -> dict[str, float]:
    """Median µs per kernel name (the part before any template list or parameters) under ncu."""
    out = subprocess.run(NCU + ["-k", f"regex:{kernels}", "--launch-skip", str(SKIP), "--launch-count", str(COUNT)]
                         + cmd, capture_output=True, text=True, timeout=240)
    rows = [r for r in csv.reader(io.StringIO(out.stdout[out.stdout.find('"ID"'):])) if r]
    if not rows:
        raise RuntimeError(f"no ncu rows (rc {out.returncode}): {out.stdout[-600:]} {out.stderr[-600:]}")
    head = rows[0]
    name_at, unit_at, val_at = head.index("Kernel Name"), head.index("Metric Unit"), head.index("Metric Value")
    times: dict[str, list[float]] = {}
    for r in rows[1:]:
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[r[unit_at]]
        name = r[name_at].split("<")[0].split("(")[0].strip()
        times.setdefault(name, []).append(float(r[val_at].replace(",", "")) * scale)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    tbo, cases = sys.argv[2], [c.split(":") for c in sys.argv[3].split(",")]
    rows = []
    for case in cases:
        gtype, n, path = case[0], int(case[1]), case[2] if len(case) > 2 else ""
        ours = profile(["python3", "ncu_qkgen.py", gtype.lower(), str(n), str(M), str(K), path],
                       "^(gemv|quantize_q8_1)")
        theirs = profile([tbo, "perf", "-o", "MUL_MAT", "-b", "CUDA0", "-p",
                          f"type_a={gtype},type_b=f32,m={M},n={n},k={K}"], "mul_mat|quantize")
        r = dict(type=gtype, n=n, path=path or "default", qkgen=ours, llamacpp=theirs,
                 qkgen_us=sum(ours.values()), llamacpp_us=sum(theirs.values()))
        r["ratio"] = r["qkgen_us"] / r["llamacpp_us"]
        rows.append(r)
        print(f"{gtype:<6} n={n} {r['path']:<8} qkgen {r['qkgen_us']:6.2f} us {ours}  llama.cpp {r['llamacpp_us']:6.2f} us "
              f"{theirs}  ratio {r['ratio']:.2f}", flush=True)
    json.dump(rows, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
