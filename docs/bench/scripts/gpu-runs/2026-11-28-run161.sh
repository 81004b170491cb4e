#!/usr/bin/env bash
# GPU run 161 (2026-11-28, session 30): the GPU suite and compute-sanitizer's memcheck on f68aabe (the
# M = 1 float GEMV decoded 8 elements at a time; 4 rows a lane group in teams of 4 on CUDA).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 290 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/suite.log 2>&1
echo "suite rc $?"; tail -2 $OUT/suite.log; grep -E "^FAILED|^ERROR" $OUT/suite.log | head; date -u +%H:%M:%S
timeout 140 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k memcheck -p no:cacheprovider > $OUT/memcheck.log 2>&1
echo "memcheck rc $?"; tail -1 $OUT/memcheck.log; date -u +%H:%M:%S
