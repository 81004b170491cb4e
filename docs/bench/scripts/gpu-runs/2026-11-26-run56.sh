#!/usr/bin/env bash
# GPU run 56 (2026-11-26), asked for on an H100: the int8mma path with W in fragments against int8dot,
# public calls at M = 1, 2, 4, 8 (f32 x, 4096 x 14336, cold and hot), to check the H200-measured
# defaults on the GPU.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 120 python3 pathbench.py $OUT/paths_f32.json q4_0,q5_0,q8_0 4096x14336 f32 1,2,4,8 int8dot,int8mma > $OUT/paths.log 2>&1
echo "paths rc $?"; cat $OUT/paths.log; date -u +%H:%M:%S
