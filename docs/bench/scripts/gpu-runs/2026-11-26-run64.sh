#!/usr/bin/env bash
# GPU run 64 (2026-11-26): the int8mma path with x in fragments, every row reading W in fragments and
# q4_0 / q4_1 / q5_0 with their measured knobs (runtime.paths): the int8mma GPU tests, public calls
# at M = 1..8 on the int8dot and int8mma paths (f32 x; f16 x with mma too) for the defaults, and
# llama.cpp's n = 8 under one timer.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py -q -x > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -2 $OUT/tests.log; date -u +%H:%M:%S
cd docs/bench/scripts
F=q4_0,q4_1,q5_0,q5_1,q8_0
timeout 170 python3 pathbench.py $OUT/paths_f32.json $F 4096x14336 f32 1,2,3,4,6,8 int8dot,int8mma > $OUT/paths.log 2>&1
echo "paths f32 rc $?"; date -u +%H:%M:%S
timeout 150 python3 pathbench.py $OUT/paths_f16.json $F 4096x14336 f16 2,3,4,6,8 int8dot,int8mma,mma >> $OUT/paths.log 2>&1
echo "paths f16 rc $?"; cut -c1-100 $OUT/paths.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
timeout 110 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8:int8mma,q4_1:8:int8mma,q5_0:8:int8mma,q5_1:8:int8mma,q8_0:8:int8mma > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-200 $OUT/sametimer.log | tail -12; date -u +%H:%M:%S
