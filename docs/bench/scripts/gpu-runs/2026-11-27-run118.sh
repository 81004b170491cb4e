#!/usr/bin/env bash
# GPU run 118 (2026-11-27, session 25): is gemv_int8frag_sub limited by its registers? Sweep 48
# (kernel alone, 4096 x 14336, f16 x, M = 1 and 8): each super-block row's kernel as rendered, and with
# __launch_bounds__(256, 3) / (256, 4) patched in (at most 85 / 64 registers a lane: 3 / 4 work-groups
# an SM; nvfp4 takes 112 as rendered, 2 work-groups).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 500 python3 gemv_sweep.py sweep48_frag_sub_occupancy.json $OUT/sweep48.json > $OUT/sweep48.log 2>&1; echo "sweep rc $?"
sed 's/"patch": \[\["__launch_bounds__(256)", "__launch_bounds__(256, \([34]\))"\]\]/"min_groups": \1/' $OUT/sweep48.log
date -u +%H:%M:%S
