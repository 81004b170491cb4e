#!/usr/bin/env bash
# GPU run 57 (2026-11-26), on the H100 of run 56: llama.cpp under one timer (ncu kernel time of every
# launch, both sides hot, f32 x, m = 4096, k = 14336) on qkgen's default paths, n = 8 for the five
# legacy rows and n = 1 for q4_1 and q8_0.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
wait $PEERS_PID; echo "peers rc $?"; date -u +%H:%M:%S
timeout 200 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:8,q4_1:8,q5_0:8,q5_1:8,q8_0:8,q4_1:1,q8_0:1 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
