#!/usr/bin/env bash
# GPU run 187 (2026-12-02, session 37): the device quantizer kernels alone before (4de8b58, .gpu/base)
# and after this session's changes (nf4's bucket search, the K-quant searches' kept trial remembered
# by its scale), x [4096, 14336]; Nsight Compute on the new nf4 / q4_k / q6_k kernels; the GPU tests
# of the device quantizer and bitsandbytes interop.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantsweep.py qsweep_s37.json $OUT/run187-qsweep-$tree.json > $OUT/run187-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cat $OUT/run187-qsweep-$tree.log | cut -c1-150
done
date -u +%H:%M:%S
(cd $S && timeout 100 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum \
  python3 quantncu.py qncu_s37b.json > $OUT/run187-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed.sum|Issue Slots|Achieved Occ|Registers Per" $OUT/run187-ncu.txt | cut -c1-120
date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_bnb_gpu.py > $OUT/run187-pytest.log 2>&1
echo "gpu tests rc $?"; tail -3 $OUT/run187-pytest.log | cut -c1-300; date -u +%H:%M:%S
