#!/usr/bin/env bash
# GPU run 124 (2026-11-28, session 26): public qkgen.gemv calls with f32 x on the new defaults (the mma
# path rounding x once from M = 2) and the float path, for the rows whose f32 x takes the mma path
# (pathbench.py, M = 1, 2, 4, 8, cold and hot); then llama.cpp under one timer (sametimer.py: ncu kernel
# time both sides, hot, f32 x, m = 4096, k = 14336) for the legacy rows, q4_K and q6_K at n = 1.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 200 python3 pathbench.py $OUT/paths_f32.json nf4,fp4,int4,int8,blockwise8 4096x14336 f32 1,2,4,8 float > $OUT/paths_f32.log 2>&1
echo "paths rc $?"; cut -c1-120 $OUT/paths_f32.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"; date -u +%H:%M:%S
timeout 300 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:1,q4_1:1,q5_0:1,q5_1:1,q8_0:1,q4_K:1,q6_K:1 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
