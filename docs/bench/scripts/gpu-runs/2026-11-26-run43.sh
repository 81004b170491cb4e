#!/usr/bin/env bash
# GPU run 43 (2026-11-26): gemv_int8mma copying 2-byte aligned rows in 2-byte units again, words
# otherwise, sums in the W stages, wg 256: its GPU tests, memcheck and racecheck, sweep 23 (unroll x wg
# at M = 8, and M = 4, against the int8dot kernel, kernel alone, f32 x, with registers a thread) and,
# under one timer, llama.cpp's n = 8 against the int8mma path.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py -q -x > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/tests.log; date -u +%H:%M:%S
timeout 280 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k "memcheck or racecheck" > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; grep -m3 "Invalid\|ERROR SUMMARY" $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 200 python3 gemv_sweep.py sweep23_int8mma_units.json $OUT/sweep23.json > $OUT/sweep23.log 2>&1
echo "sweep rc $?"; cut -c1-175 $OUT/sweep23.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
timeout 150 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8:int8mma,q4_1:8:int8mma,q5_1:8:int8mma,q4_0:4:int8mma,q4_0:4 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
