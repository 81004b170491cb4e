#!/usr/bin/env bash
# GPU run 51 (2026-11-26): gemv_int8frag (W in its fragments layout, made on the host for this probe)
# against gemv_int8mma and gemv_int8dot: sweep 27: groups a turn (unroll) and wg (f32 x, 4096 x 14336, kernel alone, cold and hot).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep27_int8frag_turns.json $OUT/sweep27.json > $OUT/sweep27.log 2>&1
echo "sweep rc $?"; cut -c1-175 $OUT/sweep27.log; date -u +%H:%M:%S
