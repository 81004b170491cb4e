#!/usr/bin/env bash
# GPU run 129 (2026-11-28, session 26): NVIDIA's OpenCL tests after its MMA_ROUND_X entry (nf4 from M = 4):
# round_to_f16 against numpy and the mma path's two forms with f32 x bit for bit; then the mma and
# default-path tests on CUDA again.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 -m pytest -m gpu tests/gpu/test_opencl_nvidia.py tests/gpu/test_gemv_mma_gpu.py -q -p no:cacheprovider > $OUT/gpu_ocl.log 2>&1
echo "tests rc $?"; grep -E "FAILED|ERROR" $OUT/gpu_ocl.log | head; tail -3 $OUT/gpu_ocl.log; date -u +%H:%M:%S
