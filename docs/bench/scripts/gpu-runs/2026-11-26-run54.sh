#!/usr/bin/env bash
# GPU run 54 (2026-11-26): the int8dot kernel at M = 1 reading W in blocks and in planes (sweep 28, f32
# x, 4096 x 14336, kernel alone; the planes made once per rotated copy, not timed), on the H200.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 120 python3 gemv_sweep.py sweep28_int8dot_planes_m1.json $OUT/sweep28.json > $OUT/sweep28.log 2>&1
echo "sweep rc $?"; cut -c1-175 $OUT/sweep28.log; date -u +%H:%M:%S
