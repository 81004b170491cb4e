#!/usr/bin/env bash
# GPU run 8 (2026-11-25): compute-sanitizer (all three tools) with the committed defaults (lane-group q8_1 on CUDA).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
grep -n "^INT8DOT_LANE_GROUP" codegen/runtime/paths.py
timeout 300 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -4 $OUT/sanitizer.log; date -u +%H:%M:%S
