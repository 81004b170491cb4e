#!/usr/bin/env bash
# GPU run 103 (2026-11-27, session 24, branch kfrag): gemv_int8frag_sub (the fragments layout for the
# super-block rows) on CUDA for the first time, sweep 47 against gemv_int8dot and gemv_int8mma_sub at
# 4096 x 14336, f16 x, kernel alone, cold and hot; its rel column is the error against int8dot's
# own definition (int8dot_reference).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 540 python3 gemv_sweep.py sweep47_int8frag_sub.json $OUT/sweep47.json > $OUT/sweep47.log 2>&1; echo "sweep rc $?"
cut -c1-170 $OUT/sweep47.log
date -u +%H:%M:%S
