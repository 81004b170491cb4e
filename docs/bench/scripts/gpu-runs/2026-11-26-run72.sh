#!/usr/bin/env bash
# GPU run 72 (2026-11-26): NVIDIA's OpenCL with its own default-path rows (runtime.paths kind
# "opencl-nvidia"): its GPU tests, and public gemv calls with no path at M = 1, 2, 4, 8 (f16 and f32
# x) against the reference, each row's default path printed.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu tests/gpu/test_opencl_nvidia.py -q -x -p no:cacheprovider > $OUT/tests.log 2>&1
echo "opencl gpu tests rc $?"; tail -1 $OUT/tests.log
timeout 150 python3 - <<'PY'
import numpy as np, qkgen
from qkgen.backends import open_device
from qkgen.runtime.paths import default_path
from qkgen.tools import check
dev = open_device("opencl", "NVIDIA")
rng = np.random.default_rng(0)
for fmt in ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "nf4"):
    qt = qkgen.quantize(rng.standard_normal((300, 37 * 64)).astype(np.float32), fmt)
    for dtype in ("f16", "f32"):
        for m in (1, 2, 4, 8):
            x = check.gemv_x(rng, m, qt.shape[1], dtype)
            path = default_path(dev.target, qt.format, m, dtype)
            y = qkgen.gemv(qt, x, backend="opencl", device="NVIDIA")
            if path in ("int8dot", "int8mma"):
                err, bound = check.int8dot_error(y, x, qt, dtype)
            else:
                err, bound = check.gemv_error(y, x, qt, dtype, rounded=path == "mma")
            print(fmt, dtype, m, path, "ok" if np.all(err <= bound) else "FAIL", flush=True)
PY
date -u +%H:%M:%S
