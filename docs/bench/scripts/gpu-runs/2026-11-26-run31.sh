#!/usr/bin/env bash
# GPU run 31 (2026-11-26): the GPU suite and compute-sanitizer on the tree with every change of the
# session, qkgen against llama.cpp at n = 8 under one timer (sametimer.py, f32 activations both
# sides), and a small sweep of the int8dot kernel's team shapes at M = 8 (sweep 14).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 175 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
timeout 130 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
wait $PEERS_PID; echo "peers rc $?"
timeout 170 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8,q4_1:8,q5_0:8,q5_1:8,q8_0:8,q2_K:8,q3_K:8,q4_K:8,q5_K:8,q6_K:8,mxfp4:8,nvfp4:8 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
timeout 50 python3 gemv_sweep.py sweep14_m8.json $OUT/sweep14.json > $OUT/bench.log 2>&1
echo "sweep14 rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
