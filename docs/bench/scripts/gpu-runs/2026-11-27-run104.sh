#!/usr/bin/env bash
# GPU run 104 (2026-11-27, session 24, branch kfrag = main 270f35b + the fragments layout for the
# super-block rows, which no default takes): compute-sanitizer and the GPU suite on session 23's
# OpenCL queue lock and buffer discard (NVIDIA OpenCL) and everything else.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
timeout 400 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
