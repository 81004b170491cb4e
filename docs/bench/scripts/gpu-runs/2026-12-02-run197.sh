#!/usr/bin/env bash
# GPU run 197 (2026-12-03, session 38): the GPU tests of every int8mma form (the plans' fragments
# branch is shared now), CUDA graphs, out=, the CUDA ops and NVIDIA's OpenCL on the final tree.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 420 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_int8mma_gpu.py tests/gpu/test_cuda_graph.py \
  tests/gpu/test_gemv_out.py tests/gpu/test_cuda_ops.py tests/gpu/test_opencl_nvidia.py --durations=3 > $OUT/run197-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run197-pytest.log | cut -c1-300; date -u +%H:%M:%S
