#!/usr/bin/env bash
# GPU run 63 (2026-11-26): gemv_int8frag (x in fragments), kernel alone: prefetch (the next turn's W
# loaded before this turn's products) against none, with turns of 1 and 2 groups, work-groups of 8
# and 16 warps, M = 4 and 8, f32 x, 4096 x 14336, every row.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 450 python3 gemv_sweep.py sweep31_int8frag_prefetch.json $OUT/sweep31.json > $OUT/sweep31.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep31.log | sed 's/"op": "gemv_int8frag", //' | tail -64
date -u +%H:%M:%S
