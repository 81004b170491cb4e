#!/usr/bin/env bash
# GPU run 25 (2026-11-25): the mma path's two-codes-at-a-time f16 decode (q4_0, q5_0, q8_0): its GPU tests and
# public calls on every path (pathbench.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -q -m gpu tests/gpu/test_gemv_mma_gpu.py -p no:cacheprovider > $OUT/gpu_mma.log 2>&1
echo "gpu mma tests rc $?"; tail -2 $OUT/gpu_mma.log; date -u +%H:%M:%S
cd docs/bench/scripts && timeout 90 python3 pathbench.py $OUT/pathbench.json q4_0,q5_0,q8_0 > $OUT/pathbench.log 2>&1
echo "pathbench rc $?"; cat $OUT/pathbench.log; date -u +%H:%M:%S
