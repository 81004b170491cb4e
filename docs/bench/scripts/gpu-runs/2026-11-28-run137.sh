#!/usr/bin/env bash
# GPU run 137 (2026-11-28, session 27): NVIDIA's OpenCL with scratch reuse (1cc41e4+): its GPU tests
# and the host time of a warm two-launch call with pyopencl arrays, with and without reuse.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 90 python3 oclscratch.py opencl NVIDIA 2>&1 | grep -v Warn | tail -3 | tee $OUT/oclscratch.log)
timeout 300 python3 -m pytest -m gpu tests/gpu/test_opencl_nvidia.py -q -x -p no:cacheprovider > $OUT/ocl.log 2>&1
echo "opencl tests rc $?"; tail -3 $OUT/ocl.log; date -u +%H:%M:%S
