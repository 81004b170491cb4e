#!/usr/bin/env bash
# GPU run 83 (2026-11-26): llama.cpp under one timer (sametimer.py: ncu kernel time both sides, hot,
# f32 x, m = 4096, k = 14336) for the super-block rows and mxfp4 at n = 1 and 8, on this session's
# default paths (x in planes for q3_k and q6_k at n = 8).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
wait $PEERS_PID; echo "peers rc $?"; date -u +%H:%M:%S
timeout 420 python3 sametimer.py $OUT/sametimer.json $TBO q2_K:1,q3_K:1,q4_K:1,q5_K:1,q6_K:1,mxfp4:1,q2_K:8,q3_K:8,q4_K:8,q5_K:8,q6_K:8,mxfp4:8 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
