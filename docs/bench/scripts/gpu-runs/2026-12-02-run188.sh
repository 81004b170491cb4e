#!/usr/bin/env bash
# GPU run 188 (2026-12-02, session 37): the device quantizer kernels alone before (4de8b58, .gpu/base)
# and after (nf4's bucket search, the K-quant searches' kept trial and float-rounded trial codes),
# with per_lane 32 beside the default 16 for the blockwise rows; public qkgen.quantize calls (device
# time by torch.profiler, wall time per call); Nsight Compute on the new q4_k / q6_k kernels; the
# quantizer's and bitsandbytes' GPU tests and compute-sanitizer over every kernel family.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantsweep.py qsweep_s37b.json /tmp/qs-$tree.json > $OUT/run188-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-112 $OUT/run188-qsweep-$tree.log
done
date -u +%H:%M:%S
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 100 python3 quantprofile.py $OUT/run188-calls-$tree.txt nf4,q4_k,q6_k f16 > /dev/null 2>&1)
  echo "calls $tree rc $?"; grep -E "^==|dev " $OUT/run188-calls-$tree.txt | head -12 | cut -c1-120
done
date -u +%H:%M:%S
(cd $S && timeout 100 ncu --profile-from-start off --section SpeedOfLight --section Occupancy \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum \
  python3 quantncu.py qncu_s37b.json > $OUT/run188-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed.sum|Issue Slots|Achieved Occ" $OUT/run188-ncu.txt | cut -c1-120
date -u +%H:%M:%S
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_bnb_gpu.py \
  tests/gpu/test_sanitizer.py --durations=3 > $OUT/run188-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run188-pytest.log | cut -c1-300; date -u +%H:%M:%S
