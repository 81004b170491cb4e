#!/usr/bin/env bash
# GPU run 111 (2026-11-27, session 24): the GPU suite again on the session's last tree (NVIDIA's
# OpenCL default paths for the super-block rows from run 110; its int8mma test with W in blocks and
# in fragments for every int8dot row). compute-sanitizer (CUDA only) ran in run 107 and is not repeated.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1 2>/dev/null
timeout 450 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
