#!/usr/bin/env bash
# GPU run 27 (2026-11-25): the GPU test suite with the final defaults (mma for bf16 x too).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 280 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
