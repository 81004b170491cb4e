#!/usr/bin/env bash
# GPU run 156 (2026-11-28, session 30): sweep 55 (diagnostic what-ifs, some with wrong sums on purpose):
# where the float GEMV's time goes at M = 1 -- without the table lookup, without the products, without
# the table copy at the start, and the loads alone; the int8dot kernels of q4_0 and q8_0 alone beside.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep55_float_floor.json $OUT/sweep55.json > $OUT/sweep55.log 2>&1
echo "sweep rc $?"; grep -c cold $OUT/sweep55.log; grep ERROR $OUT/sweep55.log | cut -c1-300; date -u +%H:%M:%S
