#!/usr/bin/env bash
# GPU run 217 (2026-12-03, session 42): the final tree (fp4's 256 buckets a unit, 4 tiles from 1 KB of
# tables) against the session's start (7da4f89, .gpu/base): kernels alone as the public calls configure
# them, and the public calls' kernel time (quantprofile.py); the GPU quantize tests and compute-sanitizer;
# fp4's ties, tiles, tails and odd sizes through CUDA and NVIDIA's OpenCL.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantsweep.py $([ $tree = base ] && echo qsweep_s42d_base.json || echo qsweep_s42d.json) /tmp/qs-$tree.json > $OUT/run217-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run217-qsweep-$tree.log
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantprofile.py $OUT/run217-profile-$tree.txt fp4,nf4,blockwise8 f16,bf16,f32 > /dev/null 2>&1)
  echo "profile $tree rc $?"; grep -iE "^(fp4|nf4|blockwise8|format|\|)" $OUT/run217-profile-$tree.txt | head -20 | cut -c1-150
done
date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 150 python3 - > $OUT/run217-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(12)
keep = rq.blockwise_knobs
for be in ("cuda", "opencl"):
    T.test_ties_go_where_the_reference_sends_them(be, None)
    print(be, "ties equal the reference")
    for tiles, pl in ((2, 16), (3, 32), (1, 32)):
        for dt in (("f16", "bf16", "f32") if be == "cuda" else ("f16", "f32")):
            rq.blockwise_knobs = lambda *a, t=tiles, p=pl: {"tiles": t, "per_lane": p}
            span = 256 * pl
            for n in (2 * tiles * span + 300, (tiles + 1) * span + span // 2 + 37, tiles * span, tiles * span - 5):
                T.run(T.random_x(rng, (n,)), F.get("fp4"), be, dt)
    rq.blockwise_knobs = keep
    print(be, "fp4 tiles and tails equal the reference")
    for shape in T.shapes(F.get("fp4")):
        for dt in ("f16", "f32"):
            T.run(T.random_x(rng, shape), F.get("fp4"), be, dt)
    T.run(T.random_x(rng, (5, 4099)), F.get("fp4"), be, blocksize=64)
    T.test_blockwise_extreme_absmax(be, "fp4", rng, None)
    print(be, "fp4 odd sizes and extreme absmax equal the reference")
PY
echo "corners rc $?"; grep -v Warn $OUT/run217-corners.log | tail -8
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_sanitizer.py --durations=3 > $OUT/run217-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run217-pytest.log | cut -c1-300; date -u +%H:%M:%S
