#!/usr/bin/env bash
# GPU run 22 (2026-11-25): the final gemv_mma template text (line-length tidying) on CUDA: its GPU tests, the
# default-path GEMV tests, compute-sanitizer.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 -m pytest -q -m gpu tests/gpu/test_gemv_mma_gpu.py tests/gpu/test_cuda_ops.py tests/gpu/test_cuda_graph.py -p no:cacheprovider > $OUT/gpu_mma.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/gpu_mma.log; date -u +%H:%M:%S
timeout 190 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
