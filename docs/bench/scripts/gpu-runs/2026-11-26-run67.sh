#!/usr/bin/env bash
# GPU run 67 (2026-11-26): compute-sanitizer (memcheck, racecheck, initcheck) over every kernel
# family, the int8mma path in both W layouts (x in fragments, the knobs of runtime.paths); then the
# M = 1 and M = 8 public calls with f16 and bf16 x for the M = 8 / M = 1 ratio.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 330 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; grep -m3 "Invalid\|ERROR SUMMARY: [1-9]\|Uninitialized" $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
F=q4_0,q4_1,q5_0,q5_1,q8_0
for t in f16 bf16; do
  timeout 100 python3 pathbench.py $OUT/paths_$t.json $F 4096x14336 $t 1,8 int8dot > $OUT/paths_$t.log 2>&1
  echo "paths $t rc $?"; grep default $OUT/paths_$t.log | cut -c1-90
done
date -u +%H:%M:%S
