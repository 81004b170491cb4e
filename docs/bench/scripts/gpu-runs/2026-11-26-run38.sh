#!/usr/bin/env bash
# GPU run 38 (2026-11-26): q5_K against llama.cpp at n = 1 under one timer (sametimer.py) with q5_k's
# final 2 slices at M = 1.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
wait $PEERS_PID; echo "peers rc $?"
timeout 60 python3 sametimer.py $OUT/sametimer.json $TBO q5_K:1 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
