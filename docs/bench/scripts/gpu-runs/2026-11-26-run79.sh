#!/usr/bin/env bash
# GPU run 79 (2026-11-26): gemv_int8dot with W and x in planes for the super-block rows (the code runs
# 16-byte aligned: q6_k's 210-byte blocks are only 2-byte aligned) against blocks, kernel alone, M = 1
# and 8, f16 x, 4096 x 14336; q6_k / q4_k / q3_k with a few shapes, f32 x and 14336 x 4096 (sweep 37).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 500 python3 gemv_sweep.py sweep37_kquant_planes.json $OUT/sweep37.json > $OUT/sweep37.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep37.log | sed 's/"op": "gemv_int8dot", //' | tail -50
date -u +%H:%M:%S
