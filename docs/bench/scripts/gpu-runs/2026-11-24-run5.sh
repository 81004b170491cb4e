#!/usr/bin/env bash
# GPU run 5 (2026-11-24): int8dot with staged activations (sweep 8), then compute-sanitizer (all three tools).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 230 python3 docs/bench/scripts/gemv_sweep.py docs/bench/scripts/sweep8_int8dot_stage.json $OUT/sweep8.json > $OUT/sweep8.log 2>&1
echo "sweep rc $?"; date -u +%H:%M:%S
timeout 320 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -5 $OUT/sanitizer.log; date -u +%H:%M:%S
cat $OUT/sweep8.log
