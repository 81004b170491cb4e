"""compute-sanitizer (memcheck, racecheck, initcheck) over every kernel family on CUDA: 0 errors."""

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu

# One process runs every op of the registry on a few formats chosen to cover the code paths: table
# codes with nested statistics, split nibbles, fifth bits, 2-byte-aligned blocks, plain-int groups,
# partial last chunks (odd sizes); M = 1 and M = 3 for the GEMV families.
SCRIPT = r"""
import numpy as np, qkgen
import qkgen.runtime.api as api
from qkgen.interop.lookup import embedding
from qkgen.kernels.ops import OPS
from qkgen.runtime.api import quantize_q8_1_device
rng = np.random.default_rng(0)
cases = [("nf4", dict(nested=True)), ("fp4", {}), ("blockwise8", {}), ("q4_0", {}), ("q5_1", {}), ("q8_0", {}),
         ("int4", dict(scale_mode="group")), ("int1", dict(scale_mode="row")), ("q4_k", {}), ("q6_k", {}),
         ("q3_k", {}), ("mxfp4", {}), ("nvfp4", {})]
ops = set()
int8mma_layout = api.default_int8mma_layout
for name, kw in cases:
    kq, gg = name.endswith("_k") or name == "nvfp4", name.startswith(("q", "mx"))  # super-blocks; GGUF blocks
    k = 512 if kq else 320 if gg else 384
    qt = qkgen.quantize(rng.standard_normal((9, k)).astype(np.float32), name, **kw)
    odd = qkgen.quantize(rng.standard_normal((3, 256 if kq else 96 if gg else 333))
                         .astype(np.float32), name, **kw)
    if name != "int1":  # the device quantizer (int1's mean scale: host only)
        qkgen.quantize(rng.standard_normal((5, k)).astype(np.float32), name, backend="cuda", **kw)
        ops |= {"quantize", "quantize_stats", "quantize_blockwise"} | ({"exact_sum"} if kw.get("nested") else set())
    for dtype in ("f32", "bf16"):
        qkgen.dequantize(odd, dtype, backend="cuda"); ops.add("dequantize")
        embedding(qt, np.array([8, 0, 3, 3], np.uint32), dtype, backend="cuda"); ops.add("embedding")
        for m in (1, 3) if name in OPS["gemv"].formats() else ():
            x = rng.standard_normal((m, k)).astype(np.float32)
            x = x if dtype == "f32" else qkgen.formats.reference.round_to(x, dtype)
            qkgen.gemv(qt, x, backend="cuda"); ops.add("gemv")
            if dtype == "f32" and m == 1 and name in ("nf4", "fp4", "int4"):  # the float path's prefetch
                qkgen.gemv(qt, x, path="float", backend="cuda")
            if dtype == "bf16" and m == 1 and name in ("nf4", "fp4", "int4"):  # the float path by byte pairs
                qkgen.gemv(qt, x, path="pairs", backend="cuda")
            if name in OPS["gemv_int8dot"].formats():
                qkgen.gemv(qt, x, path="int8dot", backend="cuda"); ops |= {"gemv_int8dot", "quantize_q8_1"}
    if name in OPS["gemv_int8mma"].formats():  # M = 3 and 8; odd block counts end a row 2 bytes past a word
        for q, m in ((qt, 3), (odd, 8)):
            for layout in ("blocks", "fragments"):  # whichever runtime.paths takes for the format, both
                api.default_int8mma_layout = lambda target, fmt, layout=layout: layout
                qkgen.gemv(q.with_arrays(data=q.data.copy()), rng.standard_normal((m, q.shape[1])).astype(np.float32),
                           path="int8mma", backend="cuda")
        api.default_int8mma_layout = int8mma_layout
        ops |= {"gemv_int8mma", "gemv_int8frag", "repack_fragments"}
    if name in OPS["gemv_int8mma_sub"].formats():  # super-block rows' int8mma path: M = 3 and 8, both layouts
        for q, m in ((qt, 3), (odd, 8)):
            for layout in ("blocks", "fragments"):
                qkgen.gemv(q.with_arrays(data=q.data.copy()), rng.standard_normal((m, q.shape[1])).astype(np.float32),
                           path="int8mma", layout=layout, backend="cuda")
        ops |= {"gemv_int8mma_sub", "gemv_int8frag_sub", "repack_fragments_sub"}
    if name in OPS["gemv_mma"].formats():  # f16 x; M = 3 and 8, rows and chunks past the ends
        for m in (3, 8):
            x = rng.standard_normal((m, k)).astype(np.float16)
            qkgen.gemv(qt, x, path="mma", backend="cuda"); ops.add("gemv_mma")
        if name in ("nf4", "int4"):  # the byte-pair table (CUDA's), K = 320 ending in half a step
            q = qkgen.quantize(rng.standard_normal((9, 320)).astype(np.float32), name, **kw)
            qkgen.gemv(q, rng.standard_normal((3, 320)).astype(np.float16), path="mma", backend="cuda")
        # f32 x rounded by round_to_f16 first (odd M: its last work-group runs past M * K / 2 words)
        x = rng.standard_normal((3, k)).astype(np.float32)
        api._bind_gemv(qt, x, "mma", "cuda", None, True, None, True)({"x": x}); ops.add("round_to_f16")
# the int8dot path's planes layout (a knob: runtime.paths.INT8DOT_LAYOUT is empty), patched in here,
# block and super-block rows
api.default_layout = lambda target: "planes"
for name, k in (("q4_0", 320), ("q5_1", 320), ("q8_0", 320), ("q6_k", 512), ("mxfp4", 512)):
    qt = qkgen.quantize(rng.standard_normal((9, k)).astype(np.float32), name)
    for m in (1, 3):
        qkgen.gemv(qt, rng.standard_normal((m, k)).astype(np.float32), path="int8dot", backend="cuda")
    assert qt.__dict__.get(api._PLANES), f"{name}: the planes layout was not used"
ops.add("repack_planes")
missing = set(OPS) - ops
assert not missing, f"kernel families not exercised: {missing}"
print("SANITIZE_RAN", sorted(ops))
"""


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A kernel cache the script has filled once without the sanitizer: under it, the tools then
    time launches, not nvcc (a cold run did not finish in 100 s)."""
    env = {**os.environ, "QKGEN_CACHE_DIR": str(tmp_path_factory.mktemp("sanitizer") / "cache")}
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0 and "SANITIZE_RAN" in r.stdout, (r.stdout + r.stderr)[-3000:]
    return env


@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "initcheck"])
def test_compute_sanitizer_reports_no_errors(tool, warm_cache):
    exe = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(exe):
        pytest.skip("compute-sanitizer not found")
    env = warm_cache
    r = subprocess.run([exe, "--tool", tool, "--error-exitcode", "3", sys.executable, "-c", SCRIPT],
                       capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
    out = r.stdout + r.stderr
    assert "SANITIZE_RAN" in out, out[-3000:]
    # memcheck and initcheck end with "ERROR SUMMARY: N errors", racecheck with "... (N errors, N warnings)"
    clean = "ERROR SUMMARY: 0 errors" in out or "hazards displayed (0 errors, 0 warnings)" in out
    assert r.returncode == 0 and clean, out[-3000:]
