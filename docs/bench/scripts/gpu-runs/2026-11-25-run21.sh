#!/usr/bin/env bash
# GPU run 21 (2026-11-25): the GPU test suite and compute-sanitizer with the mma path and its defaults.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 390 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -12; date -u +%H:%M:%S
timeout 190 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
