#!/usr/bin/env bash
# GPU run 17 (2026-11-25): nested statistics with exact_sum's slots in torch memory (no driver alloc/free per call).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 120 python3 -m pytest -q -m gpu tests/gpu/test_quantize_gpu.py -p no:cacheprovider > $OUT/gpu_quantize.log 2>&1
echo "gpu quantize tests rc $?"; tail -1 $OUT/gpu_quantize.log
cd docs/bench/scripts
timeout 90 python3 quantbench.py $OUT/quantbench_nested.json nf4,fp4 > $OUT/quantbench_nested.log 2>&1; echo "quantbench rc $?"
date -u +%H:%M:%S
cat $OUT/quantbench_nested.log
