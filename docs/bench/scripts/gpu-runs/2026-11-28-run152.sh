#!/usr/bin/env bash
# GPU run 152 (2026-11-28, session 29): the device quantizers' tables read a lane apart (KEYS, MAGS,
# ROUND_UP) in read-only global memory (b78fc42): the GPU quantize tests, then the quantizer kernels
# alone before (e79f735, staged in .gpu/base) and after, in one run; then compute-sanitizer's memcheck.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 90 python3 -m pytest -m gpu tests/gpu/test_quantize_gpu.py -q -p no:cacheprovider > $OUT/qtests.log 2>&1
echo "quantize tests rc $?"; tail -1 $OUT/qtests.log; date -u +%H:%M:%S
for tree in base new; do
  pp=$PYTHONPATH; [ $tree = base ] && pp=$PWD/.gpu/base:$PYTHONPATH
  (cd docs/bench/scripts && PYTHONPATH=$pp timeout 100 python3 quantsweep.py qsweep_s29_tables.json /tmp/q$tree.json \
    > $OUT/qsweep_$tree.log 2>&1)
  echo "$tree rc $?"; cut -c1-150 $OUT/qsweep_$tree.log
done
date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k memcheck -p no:cacheprovider > $OUT/memcheck.log 2>&1
echo "memcheck rc $?"; tail -1 $OUT/memcheck.log; date -u +%H:%M:%S
