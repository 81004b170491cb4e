#!/usr/bin/env bash
# GPU run 149 (2026-11-28, session 29): sweep 51, dequantize to bf16 with one chunk a work-item (cpi 1)
# and other chunk counts, for the rows below 90% of the copy ceiling on the H200 (nf4 / fp4 nested,
# int4 rows and groups, blockwise8).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep51_dequantize_cpi.json $OUT/sweep51.json > $OUT/sweep51.log 2>&1
echo "sweep rc $?"; cut -c1-130 $OUT/sweep51.log; date -u +%H:%M:%S
