#!/usr/bin/env bash
# GPU run 203 (2026-12-03, session 39): the kept tree (the late wait reverted): the chains' GPU tests
# (CUDA graphs, int8mma, NVIDIA's OpenCL, out=), run 202's failing scratch test three more times, and
# compute-sanitizer memcheck and racecheck over its case list.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
P="python3 -m pytest -m gpu -q -p no:cacheprovider"
timeout 200 $P tests/gpu/test_cuda_graph.py tests/gpu/test_int8mma_gpu.py tests/gpu/test_opencl_nvidia.py tests/gpu/test_gemv_out.py > $OUT/run203-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run203-pytest.log | cut -c1-300
for i in 1 2 3; do
  timeout 60 $P tests/gpu/test_cuda_graph.py -k test_two_launch_calls_keep_one_scratch_per_stream > $OUT/run203-scratch-$i.log 2>&1
  echo "scratch test $i rc $?"; tail -1 $OUT/run203-scratch-$i.log | cut -c1-200
done
timeout 150 $P tests/gpu/test_sanitizer.py -k "memcheck or racecheck" > $OUT/run203-sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/run203-sanitizer.log | cut -c1-300; date -u +%H:%M:%S
