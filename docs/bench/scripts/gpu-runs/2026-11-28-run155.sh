#!/usr/bin/env bash
# GPU run 155 (2026-11-28, session 30): sweep 54 (what-if): the float GEMV's 4-bit code lookup from
# registers by byte permutes (the table's f16 values as eight words), no shared-memory read a weight;
# decoded apart from the products (as now) or next to them, with the work-group and rows-a-lane knobs.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep54_register_table.json $OUT/sweep54.json > $OUT/sweep54.log 2>&1
echo "sweep rc $?"; grep -c cold $OUT/sweep54.log; grep ERROR $OUT/sweep54.log | cut -c1-300; date -u +%H:%M:%S
