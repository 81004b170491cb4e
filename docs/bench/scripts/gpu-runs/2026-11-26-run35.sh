#!/usr/bin/env bash
# GPU run 35 (2026-11-26): one row a team for q8_0 at M = 1 (sweep 17): the int8dot GPU tests,
# compute-sanitizer (q8_0's int8dot at M = 1 is one of its cases), and q8_0 / q4_1 against llama.cpp at
# n = 1 under one timer (sametimer.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 python3 -m pytest -q -m gpu tests/gpu -k "int8dot and not sanitizer" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu int8dot tests rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
timeout 130 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
wait $PEERS_PID; echo "peers rc $?"
timeout 60 python3 sametimer.py $OUT/sametimer.json $TBO q8_0:1,q4_1:1 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
