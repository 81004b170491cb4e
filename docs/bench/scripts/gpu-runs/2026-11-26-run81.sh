#!/usr/bin/env bash
# GPU run 81 (2026-11-26): with f32 x at M = 1 (and 2), the float path with prefetch against the mma
# path (x rounded to f16) for nf4 / fp4 nested and int4 row / group, three shapes (sweep 38), kernel alone.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 400 python3 gemv_sweep.py sweep38_f32_m1_paths.json $OUT/sweep38.json > $OUT/sweep38.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep38.log | tail -40
date -u +%H:%M:%S
