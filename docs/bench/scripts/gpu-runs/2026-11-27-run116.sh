#!/usr/bin/env bash
# GPU run 116 (2026-11-27, session 25): the quantizer on the final tree (ecad753) against ac34123
# (.gpu/base) in the same run, kernels alone (qsweep_s25_tables.json), then compute-sanitizer over
# every kernel family (the quantize families included).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for tree in base new; do
  pp=$PYTHONPATH; [ $tree != new ] && pp=$PWD/../../../.gpu/$tree:$PYTHONPATH
  PYTHONPATH=$pp timeout 150 python3 quantsweep.py qsweep_s25_tables.json $OUT/q_$tree.json > $OUT/q_$tree.log 2>&1; echo "$tree rc $?"
  sed 's/  */ /g; s/ equal to the public call//' $OUT/q_$tree.log
done
cd ../../..
timeout 280 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
