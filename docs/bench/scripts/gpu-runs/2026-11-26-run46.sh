#!/usr/bin/env bash
# GPU run 46 (2026-11-26): gemv_int8mma with its stage rows padded to 4 (mod 8) words (bank_pad): its
# GPU tests, sweep 24 (bank_pad off / on at M = 8, kernel alone, f32 x) and, under one timer,
# llama.cpp's n = 8 against the int8mma path for q5_0 and q8_0 and the default path for q4_0, q4_1, q5_1.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py -q -x > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -2 $OUT/tests.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 150 python3 gemv_sweep.py sweep24_int8mma_banks.json $OUT/sweep24.json > $OUT/sweep24.log 2>&1
echo "sweep rc $?"; cut -c1-175 $OUT/sweep24.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
timeout 120 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8,q4_1:8,q5_1:8,q5_0:8:int8mma,q8_0:8:int8mma > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
