#!/usr/bin/env bash
# GPU run 215 (2026-12-03, session 42): fp4's bucket search with 256 buckets a unit (one key each) against the
# tree before it (e7f81ef, .gpu/base), kernels alone; tiles and 32 elements a work-item; the log buckets with
# f32 x; Nsight Compute on fp4 / nf4 with f16 x (bank conflicts); ties, tails and odd sizes through CUDA and
# NVIDIA's OpenCL.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 200 python3 quantsweep.py $([ $tree = base ] && echo qsweep_s42b_base.json || echo qsweep_s42b.json) /tmp/qs-$tree.json > $OUT/run215-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run215-qsweep-$tree.log
done
date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 150 python3 - > $OUT/run215-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
from _pytest.monkeypatch import MonkeyPatch
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(12)
keep = rq.blockwise_knobs
for be in ("cuda", "opencl"):
    T.test_ties_go_where_the_reference_sends_them(be, None)
    print(be, "ties equal the reference")
    for name in ("nf4", "fp4"):
        for dt in ("f32", "f16"):
            mp = MonkeyPatch()
            try:
                T.test_blockwise_log_buckets_for_the_nearest_rule(be, name, dt, rng, None, mp)
            finally:
                mp.undo()
    print(be, "log-bucket corners equal the reference")
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
echo "corners rc $?"; tail -9 $OUT/run215-corners.log
(cd $S && timeout 100 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
  python3 quantncu.py qncu_s42b.json > $OUT/run215-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed|bank_conflicts|Achieved Occ|Theoretical Occ|Warp Cycles Per Issued|Compute \(SM\)" $OUT/run215-ncu.txt | cut -c1-120
date -u +%H:%M:%S
