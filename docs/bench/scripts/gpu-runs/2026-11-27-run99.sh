#!/usr/bin/env bash
# GPU run 99 (2026-11-27, session 22): gemv_int8mma_sub with each step's super-blocks staged in the
# warp's local memory (run 98 read the fragments straight from global memory: 1.3-2.6x slower than
# gemv_int8dot at M = 8): its GPU tests, then sweep 45 (kernel alone, 4096 x 14336, cold and hot).
# Ran on commit a5fdfea; staged, every row was slower still (q6_k 71.5 -> 180.8 us at M = 8), so
# a5fdfea was reverted.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu -q -x tests/gpu/test_int8mma_gpu.py -k "sub or torch_large" > $OUT/pytest.log 2>&1
echo "pytest rc $?"; tail -3 $OUT/pytest.log
cd docs/bench/scripts
timeout 380 python3 gemv_sweep.py sweep45_int8mma_sub_stage.json $OUT/sweep45.json > $OUT/sweep45.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep45.log
date -u +%H:%M:%S
