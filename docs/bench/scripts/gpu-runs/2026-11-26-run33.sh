#!/usr/bin/env bash
# GPU run 33 (2026-11-26): 2 rows a team at M > 1 for the 16-element sub-block rows (q2_k, q3_k, q6_k,
# nvfp4): the int8dot GPU tests, q2_k timed both ways (sweep 16), and those rows against llama.cpp at
# n = 8 under one timer (sametimer.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -q -m gpu tests/gpu -k "int8dot and not sanitizer" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu int8dot tests rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 40 python3 gemv_sweep.py sweep16_q2k.json $OUT/sweep16.json > $OUT/bench.log 2>&1
echo "sweep16 rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
timeout 100 python3 sametimer.py $OUT/sametimer.json $TBO q6_K:8,q3_K:8,nvfp4:8,q2_K:8 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
