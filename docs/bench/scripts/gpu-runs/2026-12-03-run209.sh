#!/usr/bin/env bash
# GPU run 209 (2026-12-03, session 41): quantize_blockwise with one integer read a value (log buckets'
# entries), its tiles a work-group, 16-byte code stores; kernels alone before (bce63b4, .gpu/base) and
# after; the device quantizer's GPU tests and compute-sanitizer; the ties and tiles cases through CUDA;
# Nsight Compute on the new blockwise8 kernels.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 200 python3 quantsweep.py $([ $tree = base ] && echo qsweep_s41_base.json || echo qsweep_s41.json) /tmp/qs-$tree.json > $OUT/run209-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run209-qsweep-$tree.log
done
date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 150 python3 - > $OUT/run209-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
T.test_ties_go_where_the_reference_sends_them("cuda", None)
print("ties equal the reference on CUDA")
rng = np.random.default_rng(9)
keep = rq.blockwise_knobs
for name, tiles in (("blockwise8", 8), ("blockwise8", 3), ("nf4", 3), ("fp4", 2)):
    for dt in ("f16", "bf16", "f32"):
        rq.blockwise_knobs = lambda *a, t=tiles, k=keep: {**k(*a), "tiles": t}
        span = 256 * 16
        for n in (2 * tiles * span + 300, (tiles + 1) * span + span // 2 + 37, tiles * span, tiles * span - 5):
            T.run(T.random_x(rng, (n,)), F.get(name), "cuda", dt)
    print(name, "tiles", tiles, "equal the reference on CUDA (f16, bf16, f32)")
PY
echo "corners rc $?"; tail -6 $OUT/run209-corners.log
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_sanitizer.py --durations=3 > $OUT/run209-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run209-pytest.log | cut -c1-300; date -u +%H:%M:%S
(cd $S && timeout 120 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
  python3 quantncu.py qncu_s41.json > $OUT/run209-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed|bank_conflicts|Achieved Occ|Registers Per|Warp Cycles Per Issued|DRAM Through" $OUT/run209-ncu.txt | cut -c1-120
date -u +%H:%M:%S
