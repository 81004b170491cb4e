#!/usr/bin/env bash
# GPU run 208 (2026-12-03, session 40): public qkgen.quantize calls (device time a call, torch.profiler)
# before (b964f66, .gpu/base) and after for the rows whose kernels changed; Nsight Compute on the new
# blockwise8, mxfp4 and nvfp4 kernels (instructions, occupancy, stalls); the f16 midpoints by CUDA's
# native round-toward-zero conversion: kernels alone and the corner blocks through CUDA.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantprofile.py $OUT/run208-calls-$tree.txt mxfp4,nvfp4,blockwise8,nf4 f16,bf16,f32 > /dev/null 2>&1)
  echo "calls $tree rc $?"; grep -E "^==|dev " $OUT/run208-calls-$tree.txt | cut -c1-120
done
(cd $S && timeout 100 python3 quantsweep.py qsweep_s40c.json /tmp/qs.json > $OUT/run208-qsweep.log 2>&1)
echo "sweep rc $?"; cut -c1-120 $OUT/run208-qsweep.log | head -9
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 120 python3 - > $OUT/run208-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
rng = np.random.default_rng(8)
for name in T.FP4_ROWS:
    fmt = F.get(name)
    for dt in ("f16", "bf16"):
        T.run(T.fp4_corner_x16(fmt, dt, rng), fmt, "cuda", dt)
        T.run(T.random_x(rng, (257, 3 * fmt.block), outliers=9), fmt, "cuda", dt)
    T.run(T.fp4_corner_x(fmt, rng), fmt, "cuda")
    print(name, "corners equal the reference on CUDA")
PY
echo "corners rc $?"; tail -3 $OUT/run208-corners.log
date -u +%H:%M:%S
(cd $S && timeout 150 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum \
  python3 quantncu.py qncu_s40b.json > $OUT/run208-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed|Achieved Occ|Registers Per|Warp Cycles Per Issued|Compute \(SM\)|DRAM Through" $OUT/run208-ncu.txt | cut -c1-120
date -u +%H:%M:%S
