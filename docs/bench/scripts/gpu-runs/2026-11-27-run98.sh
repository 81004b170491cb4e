#!/usr/bin/env bash
# GPU run 98 (2026-11-27, session 22): gemv_int8mma_sub (the int8mma path for super-block rows) on
# CUDA: its GPU tests, then sweep 44 against gemv_int8dot at M = 1 / 4 / 8, kernel alone,
# 4096 x 14336, cold and hot, with its knobs (wg, unroll).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -m gpu -q -x tests/gpu/test_int8mma_gpu.py -k "sub or torch_large" > $OUT/pytest.log 2>&1
echo "pytest rc $?"; tail -3 $OUT/pytest.log
cd docs/bench/scripts
timeout 330 python3 gemv_sweep.py sweep44_int8mma_sub.json $OUT/sweep44.json > $OUT/sweep44.log 2>&1; echo "sweep rc $?"
cut -c1-170 $OUT/sweep44.log
date -u +%H:%M:%S
