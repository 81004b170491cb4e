#!/usr/bin/env bash
# GPU run 48 (2026-11-26): gemv_int8mma with asynchronous copies (cp.async) into several stages per
# warp: its GPU tests, then sweep 25 (stages, unroll, wg at M = 8; M = 1; int8dot beside, f32 x).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py -q -x > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/tests.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep25_int8mma_async.json $OUT/sweep25.json > $OUT/sweep25.log 2>&1
echo "sweep rc $?"; cut -c1-175 $OUT/sweep25.log; date -u +%H:%M:%S
