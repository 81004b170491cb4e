#!/usr/bin/env bash
# GPU run 107 (2026-11-27, session 24, branch kfrag: main 270f35b + gemv_int8frag_sub, the
# super-block rows' int8mma path with W in fragments, CUDA's default for them from runs 105-106):
# compute-sanitizer over every kernel family, then the GPU suite (session 23's OpenCL queue lock
# and buffer discard run on NVIDIA's OpenCL there too).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
timeout 370 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
