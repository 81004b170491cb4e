#!/usr/bin/env bash
# GPU run 42 (2026-11-26): gemv_int8mma copying whole words (rows of 2-byte aligned blocks from the
# word at or below) with its sums in the W stages: its GPU tests, the sanitizer, sweep 22 (unroll x wg
# at M = 8, and M = 2, against the int8dot kernel, kernel alone, f32 x) and, under one timer,
# llama.cpp's n = 8 against the int8mma path.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py -q -x > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/tests.log; date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -x > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 200 python3 gemv_sweep.py sweep22_int8mma_words.json $OUT/sweep22.json > $OUT/sweep22.log 2>&1
echo "sweep rc $?"; cut -c1-160 $OUT/sweep22.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
timeout 150 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8:int8mma,q4_1:8:int8mma,q5_0:8:int8mma,q5_1:8:int8mma,q8_0:8:int8mma > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
