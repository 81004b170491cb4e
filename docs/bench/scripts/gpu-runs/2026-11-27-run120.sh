#!/usr/bin/env bash
# GPU run 120 (2026-11-27, session 25): quantize_blockwise's bucketed lookup (9304ac3, new) against the
# breadth-first tree (ecad753, .gpu/prev) and ac34123 (.gpu/base) in one run, kernels alone
# (qsweep_s25_bw8.json); then CUDA's quantize tests and compute-sanitizer on the new tree.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for tree in base prev new; do
  pp=$PYTHONPATH; [ $tree != new ] && pp=$PWD/../../../.gpu/$tree:$PYTHONPATH
  PYTHONPATH=$pp timeout 120 python3 quantsweep.py qsweep_s25_bw8.json $OUT/q_$tree.json > $OUT/q_$tree.log 2>&1; echo "$tree rc $?"
  sed 's/  */ /g; s/ equal to the public call//' $OUT/q_$tree.log
done
cd ../../..
timeout 150 python3 -m pytest -m gpu tests/gpu/test_quantize_gpu.py -q -p no:cacheprovider > $OUT/qtest.log 2>&1; echo "quantize gpu tests rc $?"; tail -1 $OUT/qtest.log
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1; echo "sanitizer rc $?"; tail -1 $OUT/sanitizer.log
date -u +%H:%M:%S
