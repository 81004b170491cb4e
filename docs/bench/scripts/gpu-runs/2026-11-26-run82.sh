#!/usr/bin/env bash
# GPU run 82 (2026-11-26): the session's tree: compute-sanitizer (memcheck, racecheck, initcheck) over
# every kernel family (now with the float path's prefetch and the planes layout of q6_k and mxfp4),
# then the GPU suite but the sanitizer and decode-time tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 300 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; grep -m3 "Invalid\|ERROR SUMMARY: [1-9]\|Uninitialized" $OUT/sanitizer.log; date -u +%H:%M:%S
timeout 280 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -3 $OUT/gpu_suite.log; date -u +%H:%M:%S
