#!/usr/bin/env bash
# GPU run 36 (2026-11-26): the int8dot team shape once more (sweep 18, f32 x, kernel alone): 2 rows a
# team at M = 8 for the legacy GGUF rows, and q5_k's shapes at M = 1.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 120 python3 gemv_sweep.py sweep18.json $OUT/sweep18.json > $OUT/bench.log 2>&1
echo "sweep18 rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
