#!/usr/bin/env bash
# GPU run 61 (2026-11-26): gemv_int8frag with x in its fragments layout, kernel alone: turns of 1 or
# 2 groups (unroll) x work-groups of 8, 16 or 32 warps, M = 4 and 8, f32 x, 4096 x 14336, every row.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 400 python3 gemv_sweep.py sweep29_int8frag_x.json $OUT/sweep29.json > $OUT/sweep29.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep29.log | tail -64
date -u +%H:%M:%S
