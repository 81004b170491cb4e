#!/usr/bin/env bash
# GPU run 96 (2026-11-27, session 21): gemv_int8dot's knobs at M = 8 for the super-block rows whose
# M = 8 costs 2.1-2.7x their M = 1 (run 89), where the defaults spill (q2_k, q5_k): sweep 43, kernel
# alone, 4096 x 14336, cold.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep43_kquant_m8.json $OUT/sweep43.json > $OUT/sweep43.log 2>&1; echo "sweep rc $?"
cut -c1-160 $OUT/sweep43.log
date -u +%H:%M:%S
