#!/usr/bin/env bash
# GPU run 109 (2026-11-27, session 24): NVIDIA's OpenCL (mma through inline PTX) on the int8dot and
# int8mma paths of every int8dot row, the int8mma path with W in blocks and in fragments
# (gemv_int8frag_sub for the super-block rows, never run on NVIDIA's OpenCL before).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 -m pytest -m gpu tests/gpu/test_opencl_nvidia.py -q -k gemv_int8dot -p no:cacheprovider > $OUT/ocl.log 2>&1
echo "rc $?"; tail -4 $OUT/ocl.log; date -u +%H:%M:%S
