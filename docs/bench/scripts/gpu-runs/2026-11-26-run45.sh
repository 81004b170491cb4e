#!/usr/bin/env bash
# GPU run 45 (2026-11-26): the tree with the int8mma path and its defaults (runtime.paths.FASTER_INT8MMA):
# the GPU suite, compute-sanitizer (memcheck, racecheck), and llama.cpp under one timer at n = 8 on
# the default path for the five GGUF legacy rows (f32 x).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 330 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
timeout 150 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k "memcheck or racecheck" > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
wait $PEERS_PID; echo "peers rc $?"
timeout 100 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8,q4_1:8,q5_1:8,q5_0:8,q8_0:8 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
