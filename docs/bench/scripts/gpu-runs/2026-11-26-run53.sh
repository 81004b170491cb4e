#!/usr/bin/env bash
# GPU run 53 (2026-11-26): the tree with the int8mma path's fragments layout and its defaults: the GPU
# suite, compute-sanitizer (memcheck, racecheck; both int8mma layouts), and public calls at M = 1 and 2
# with every copy's first call (its repack) before timing (run 52's first M timed the repacks).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 330 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
timeout 150 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k "memcheck or racecheck" > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; grep -m3 "Invalid\|ERROR SUMMARY: [1-9]" $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 60 python3 pathbench.py $OUT/paths_f32.json q4_0,q5_0,q8_0 4096x14336 f32 1,2 int8dot,int8mma > $OUT/paths.log 2>&1
echo "paths rc $?"; cat $OUT/paths.log; date -u +%H:%M:%S
