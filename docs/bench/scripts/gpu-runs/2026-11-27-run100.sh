#!/usr/bin/env bash
# GPU run 100 (2026-11-27, session 22): the session's tree (gemv_int8mma_sub with global loads and
# 16 warps, the portable qk_lut16x8 without an indexed array): compute-sanitizer, the GPU suite
# (NVIDIA's OpenCL takes the int8mma path of every int8dot row too), then sweep 46 (gemv_int8mma_sub
# at M = 8 with its new default and with turns of 4 chunks; kernel alone, 4096 x 14336).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
timeout 300 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 70 python3 gemv_sweep.py sweep46_int8mma_sub_wg512.json $OUT/sweep46.json > $OUT/sweep46.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep46.log
date -u +%H:%M:%S
