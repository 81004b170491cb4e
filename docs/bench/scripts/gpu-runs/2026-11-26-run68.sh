#!/usr/bin/env bash
# GPU run 68 (2026-11-26): nf4 nested (bs 64) at M = 1, bf16 x, kernel alone: the float path's
# knobs (rows a lane group, slices, work-group, chunk size, staged x) and the mma path, at 8192 x 8192
# and 4096 x 14336 (Nsight Compute, run 65: the float kernel waits on its table lookups in local memory).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep32_nf4_m1.json $OUT/sweep32.json > $OUT/sweep32.log 2>&1; echo "sweep rc $?"
cut -c1-160 $OUT/sweep32.log | tail -30
date -u +%H:%M:%S
