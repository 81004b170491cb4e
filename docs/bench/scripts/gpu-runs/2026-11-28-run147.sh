#!/usr/bin/env bash
# GPU run 147 (2026-11-28, session 29): sweep 49, the 4-bit code tables (nf4, fp4) looked up by warp
# shuffles instead of local-memory reads, as source patches of the float GEMV, mma and dequantize
# kernels (kernel alone, cold and hot, each variant's error against the reference checked).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1
cd docs/bench/scripts
timeout 480 python3 gemv_sweep.py sweep49_shfl_table.json $OUT/sweep49.json > $OUT/sweep49.log 2>&1
echo "sweep rc $?"; cat $OUT/sweep49.log | cut -c1-200; date -u +%H:%M:%S
