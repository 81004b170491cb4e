#!/usr/bin/env bash
# GPU run 47 (2026-11-26): compute-sanitizer memcheck and racecheck over every kernel family on the
# final tree (gemv_int8mma with its padded stage rows).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k "memcheck or racecheck" > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; grep -m3 "Invalid\|ERROR SUMMARY: [1-9]" $OUT/sanitizer.log; date -u +%H:%M:%S
