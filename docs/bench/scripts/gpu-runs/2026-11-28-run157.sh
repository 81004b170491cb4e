#!/usr/bin/env bash
# GPU run 157 (2026-11-28, session 30): sweep 56 (what-if): the float GEMV at M = 1 word by word (each
# code word of every row decoded next to its products, x converted 8 elements at a time), so that 4 or 8
# rows a lane group fit in registers and x's loads serve more rows; sweep 55 found the loads alone at
# 2 rows a lane group reach only 48-55% of copy, 61-72% at 4.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep56_word_by_word.json $OUT/sweep56.json > $OUT/sweep56.log 2>&1
echo "sweep rc $?"; grep -c cold $OUT/sweep56.log; grep ERROR $OUT/sweep56.log | cut -c1-300; date -u +%H:%M:%S
