#!/usr/bin/env bash
# GPU run 29 (2026-11-26): table codes eight at a time (qk_lut16x8) and chunks of a whole q8_1 block
# (ept 32) for the rows of 16-element sub-blocks: their GPU tests, the kernels (sweep 13), public calls
# for q2_k/q5_k/mxfp4/nvfp4 on every path, compute-sanitizer, and qkgen against llama.cpp under one
# timer (sametimer.py: ncu's gpu__time_duration of every kernel of the op, both sides hot).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 python3 -m pytest -q -m gpu tests/gpu -k "int8dot and not sanitizer" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu int8dot tests rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 110 python3 gemv_sweep.py sweep13_chunks.json $OUT/sweep13.json > $OUT/bench.log 2>&1
echo "sweep13 rc $?"; date -u +%H:%M:%S
timeout 90 python3 pathbench.py $OUT/pathbench.json q2_k,q5_k,mxfp4,nvfp4 >> $OUT/bench.log 2>&1
echo "pathbench rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
cd - > /dev/null
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
cd docs/bench/scripts
timeout 150 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:1,q4_K:1,q6_K:1,mxfp4:1,q4_0:8 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cat $OUT/sametimer.log | cut -c1-400; date -u +%H:%M:%S
