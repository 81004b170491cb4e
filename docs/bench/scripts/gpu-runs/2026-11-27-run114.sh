#!/usr/bin/env bash
# GPU run 114 (2026-11-27, session 25): the device quantizer's table searches (breadth-first keys,
# bitsandbytes' lookup as cuts, no clamp) and MXFP4/NVFP4's integer absmax and midpoint tree, against
# the tree before them (commit ac34123, staged in .gpu/base and put first on PYTHONPATH) in the same
# run on the same machine; kernels alone (sweep qsweep_s25_tables.json), then CUDA's quantize tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for pass in base new base new; do
  pp=$PYTHONPATH; [ $pass = base ] && pp=$PWD/../../../.gpu/base:$PYTHONPATH
  PYTHONPATH=$pp timeout 150 python3 quantsweep.py qsweep_s25_tables.json $OUT/q_$pass.json > $OUT/q_$pass.log 2>&1; echo "$pass rc $?"
  PYTHONPATH=$pp python3 -c "import qkgen; print(qkgen.__file__)"
  sed 's/  */ /g; s/ equal to the public call//' $OUT/q_$pass.log
done
cd ../../..
timeout 200 python3 -m pytest -m gpu tests/gpu/test_quantize_gpu.py -q -p no:cacheprovider > $OUT/qtest.log 2>&1; echo "quantize gpu tests rc $?"; tail -2 $OUT/qtest.log
date -u +%H:%M:%S
