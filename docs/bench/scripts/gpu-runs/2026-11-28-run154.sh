#!/usr/bin/env bash
# GPU run 154 (2026-11-28, session 30): sweep 53: the float GEMV at M = 1 with the next chunk's scale
# loads issued a turn ahead (ptxas issues this turn's late in the turn, after the products started), four
# partial sums a row instead of one chain, a register cap; then compute-sanitizer on the current tree
# (racecheck and initcheck had not run since the code tables left constant memory, e79f735).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 330 python3 gemv_sweep.py sweep53_scale_prefetch.json $OUT/sweep53.json > $OUT/sweep53.log 2>&1
echo "sweep rc $?"; cut -c1-150 $OUT/sweep53.log; date -u +%H:%M:%S
cd ../../..
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
