#!/usr/bin/env bash
# GPU run 80 (2026-11-26): this session's tree (x_planes, the float path's prefetch defaults, planes for
# super-block rows): the GPU suite but the sanitizer and decode-time tests, then host time per call.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 450 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 120 python3 hostbench.py new > $OUT/hostbench.log 2>&1; echo "hostbench rc $?"
grep -E "^\[new\]" $OUT/hostbench.log | cut -c1-160
date -u +%H:%M:%S
