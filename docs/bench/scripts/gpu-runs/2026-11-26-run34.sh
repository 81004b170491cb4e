#!/usr/bin/env bash
# GPU run 34 (2026-11-26): the int8dot team shape at M = 1 for q4_1, q8_0 and q4_0 (sweep 17, f32 x,
# kernel alone), where the one-timer ratio against llama.cpp is 0.76-0.85.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 150 python3 gemv_sweep.py sweep17_m1.json $OUT/sweep17.json > $OUT/bench.log 2>&1
echo "sweep17 rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
