#!/usr/bin/env bash
# GPU run 162 (2026-12-01, session 31): sweep 60 (what-if): the float GEMV at M = 1 with a byte-pair
# table: each code byte looks up its two values as one f16/bf16 pair (a 256-entry table, one copy a
# lane so that no two lanes share a bank) and multiplies them with x's pair in one half2 instruction;
# the 4 products of a word summed in 16 bits, then in f32. Patches from pair_table_patch.py.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 420 python3 gemv_sweep.py sweep60_pair_table.json $OUT/sweep60.json > $OUT/sweep60.log 2>&1
echo "sweep rc $?"; cat $OUT/sweep60.log | cut -c1-250; date -u +%H:%M:%S
