#!/usr/bin/env bash
# GPU run 115 (2026-11-27, session 25): the quantizer after commit "code bytes from their elements"
# (new) against ac34123 (base, .gpu/base) in the same run, kernels alone (qsweep_s25_tables.json); for
# MXFP4/NVFP4 also the variant that keeps x in registers (alt, .gpu/alt: 94 registers for mxfp4);
# then CUDA's quantize tests on the new tree.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for pass in base:tables new:tables alt:fp4 base:fp4 new:fp4; do
  tree=${pass%%:*}; sweep=${pass##*:}
  pp=$PYTHONPATH; [ $tree != new ] && pp=$PWD/../../../.gpu/$tree:$PYTHONPATH
  log=$OUT/q_${tree}_$sweep.log
  PYTHONPATH=$pp timeout 150 python3 quantsweep.py qsweep_s25_$sweep.json $OUT/q_${tree}_$sweep.json > $log 2>&1; echo "$pass rc $?"
  sed 's/  */ /g; s/ equal to the public call//' $log
done
cd ../../..
timeout 200 python3 -m pytest -m gpu tests/gpu/test_quantize_gpu.py -q -p no:cacheprovider > $OUT/qtest.log 2>&1; echo "quantize gpu tests rc $?"; tail -2 $OUT/qtest.log
date -u +%H:%M:%S
