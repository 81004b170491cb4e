#!/usr/bin/env bash
# GPU run 213 (2026-12-03, session 41): the final tree (1ce86fa: the fast path also asks that a
# work-item's values lie at or below the block's absmax): the device quantizer's GPU tests, ties,
# tiles and odd sizes through CUDA and NVIDIA's OpenCL, blockwise8's kernels alone.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py > $OUT/run213-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run213-pytest.log | cut -c1-300; date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 60 python3 - > $OUT/run213-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(13)
for be in ("cuda", "opencl"):
    T.test_ties_go_where_the_reference_sends_them(be, None)
    for name in ("blockwise8", "nf4", "fp4"):
        T.test_blockwise_extreme_absmax(be, name, rng, None)
        T.run(T.random_x(rng, (3, 2 * 4 * 4096 + 300)), F.get(name), be, "f16")
    print(be, "ties, extreme absmax blocks, tails equal the reference")
PY
echo "corners rc $?"; tail -3 $OUT/run213-corners.log
(cd docs/bench/scripts && timeout 40 python3 quantsweep.py qsweep_s41d.json /tmp/qs.json > $OUT/run213-qsweep.log 2>&1)
echo "sweep rc $?"; cut -c1-150 $OUT/run213-qsweep.log; date -u +%H:%M:%S
