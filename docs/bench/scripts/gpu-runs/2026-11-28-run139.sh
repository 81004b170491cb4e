#!/usr/bin/env bash
# GPU run 139 (2026-11-28, session 27): dequantize's out= too: the out= tests again with it.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -m gpu tests/gpu/test_gemv_out.py tests/gpu/test_cuda_gpu.py -q -p no:cacheprovider > $OUT/out_tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/out_tests.log; grep -E "^(FAILED|E )" $OUT/out_tests.log | head -20; date -u +%H:%M:%S
