#!/usr/bin/env bash
# GPU run 18 (2026-11-25): the final quantize templates (comment and expression tidying) on CUDA: the GPU quantizer tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_quantize_gpu.py tests/gpu/test_cuda_ops.py -k "quantize" -p no:cacheprovider > $OUT/gpu_quantize.log 2>&1
echo "gpu quantize tests rc $?"; tail -1 $OUT/gpu_quantize.log; date -u +%H:%M:%S
