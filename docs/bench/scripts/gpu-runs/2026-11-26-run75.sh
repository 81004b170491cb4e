#!/usr/bin/env bash
# GPU run 75 (2026-11-26): gemv_int8dot with x in planes and W in blocks (x_planes) against x in
# blocks, kernel alone, every int8dot row at M = 1 and 8 (f16 x), q4_k / q6_k with f32 x and a few
# shapes (sweep 33), 4096 x 14336.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 500 python3 gemv_sweep.py sweep33_x_planes.json $OUT/sweep33.json > $OUT/sweep33.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep33.log | sed 's/"op": "gemv_int8dot", //' | tail -60
date -u +%H:%M:%S
