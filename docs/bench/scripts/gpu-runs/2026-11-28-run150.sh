#!/usr/bin/env bash
# GPU run 150 (2026-11-28, session 29): sweep 52: the code tables as read-only global arrays (__device__ const) instead of __constant__,
# whose per-work-group copy to local memory reads 16-256 distinct constant addresses a warp (serialized);
# dequantize and the float and mma GEMV (source patches).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep52_tables_global.json $OUT/sweep52.json > $OUT/sweep52.log 2>&1
echo "sweep rc $?"; cut -c1-130 $OUT/sweep52.log; date -u +%H:%M:%S
