#!/usr/bin/env bash
# GPU run 19 (2026-11-25): the mma GEMV path: its GPU tests, then sweep 9 (kernel alone, cold/hot) against
# the float and int8dot kernels at 4096 x 14336 and nf4 nested 8192 x 8192.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_gemv_mma_gpu.py -p no:cacheprovider > $OUT/gpu_mma.log 2>&1
echo "gpu mma tests rc $?"; tail -3 $OUT/gpu_mma.log; date -u +%H:%M:%S
cd docs/bench/scripts && timeout 330 python3 gemv_sweep.py sweep9_mma.json $OUT/sweep9.json > $OUT/sweep9.log 2>&1
echo "sweep rc $?"; cat $OUT/sweep9.log | grep -v "^$" | tail -90; date -u +%H:%M:%S
