#!/usr/bin/env bash
# GPU run 73 (2026-11-26): after the review (quantize_q8_1's launch sizes from one helper, the OpenCL
# helper tests through one runner): the int8mma, CUDA ops (int8dot among them), CUDA graph and
# NVIDIA OpenCL GPU tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py tests/gpu/test_opencl_nvidia.py tests/gpu/test_cuda_ops.py tests/gpu/test_cuda_graph.py -q -p no:cacheprovider > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/tests.log; date -u +%H:%M:%S
