"""Compile times: cold (empty qkgen cache) and warm (from the disk cache), each in a fresh process.

The parent side is ``compile_times``; the child side is this module run as
``python -m qkgen.tools.bench.compile_times SPEC_JSON``: it opens the device, renders each kernel
from its render keywords, times ``dev.compile`` and prints one ``QKGEN_COMPILE_TIMES`` JSON line.
A fresh process is the point: nothing compiled in the bench process may serve as a hit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from qkgen.errors import QKGenError

MARK = "QKGEN_COMPILE_TIMES "  # prefix of the child's result line (other output may precede it)
METHOD = ("dev.compile() wall time in a fresh process: cold = empty QKGEN_CACHE_DIR, warm = the cache the "
          "cold process wrote; CUDA_CACHE_DISABLE=1 in both")  # fmt: skip


def _compile_run(backend: str, device: Any, kernels: list[dict], cache: Path) -> list[dict]:
    env = dict(os.environ, QKGEN_CACHE_DIR=str(cache), CUDA_CACHE_DISABLE="1")
    spec = json.dumps({"backend": backend, "device": device, "kernels": kernels})
    p = subprocess.run([sys.executable, "-m", __name__, spec], env=env, capture_output=True, text=True,
                       timeout=1800)  # fmt: skip
    for line in p.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
    raise QKGenError(f"compile-time subprocess failed (rc {p.returncode}): {' | '.join(tail)}")


def compile_times(dev, device: Any, kernels: list[dict]) -> dict:
    """Per kernel: seconds of dev.compile() in a fresh process with an empty qkgen cache (cold),
    then in another fresh process on the cache the first one wrote (warm). Toolchain artifacts
    that are not kernels (the SYCL host helper) are copied in first; CUDA's own JIT cache is off.
    `kernels` are render keywords plus the "sha" the benchmarked source had."""
    uniq = list({json.dumps(k, sort_keys=True): k for k in kernels}.values())
    if not uniq:
        return {"kernels": [], "note": "no kernels"}
    from qkgen.cache import cache_dir

    with tempfile.TemporaryDirectory(prefix="qkgen-bench-cache-") as tmp:
        tmp_p = Path(tmp)
        helper = cache_dir("sycl_helper")
        if helper.is_dir():
            shutil.copytree(helper, tmp_p / "sycl_helper")
        before = {p for p in tmp_p.rglob("*") if p.is_file()}
        cold = _compile_run(dev.backend, device, uniq, tmp_p)
        written = len({p for p in tmp_p.rglob("*") if p.is_file()} - before)
        warm = _compile_run(dev.backend, device, uniq, tmp_p)
    rows = [{"kernel": c["kernel"], "cold_s": c["s"], "warm_s": w["s"]} for c, w in zip(cold, warm)]
    if not all(c["same_source"] for c in cold):
        raise QKGenError("compile-time process rendered a different source than the benchmarked kernel")
    out = {"kernels": rows, "cache_files_written": written, "method": METHOD}
    if written == 0:
        out["note"] = "the cold process wrote no cache files: warm times are not disk-cache hits"
    return out


def _child(spec: dict) -> list[dict]:
    """Render and compile each kernel of spec on its device, timing each compile."""
    from qkgen.backends import open_device

    from . import qkgen_impl

    dev = open_device(spec["backend"], spec["device"])
    out = []
    for kw in spec["kernels"]:
        kw = dict(kw)
        want = kw.pop("sha", None)
        ks, name, sha = qkgen_impl.render_kernel(dev, kw)
        t0 = time.perf_counter()
        dev.compile(ks)
        dt = time.perf_counter() - t0
        out.append({"kernel": name, "same_source": want is None or want == sha, "s": dt})
    return out


if __name__ == "__main__":
    print(MARK + json.dumps(_child(json.loads(sys.argv[1]))))
