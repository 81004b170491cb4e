#!/usr/bin/env bash
# GPU run 126 (2026-11-28, session 26): the GPU suite on the session's final code (round_to_f16 and the
# mma path's rounded form, the f32 defaults of runs 123-124).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline | head -1
timeout 540 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "FAILED|ERROR" $OUT/gpu_suite.log | head -20; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
