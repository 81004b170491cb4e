#!/usr/bin/env bash
# GPU run 177 (2026-12-02, session 33): sweep 74, gemv_mma with the byte-pair table (pairs on a
# 4-bit row with statistics arrays: code values unscaled, each piece's products scaled once) against
# gemv_mma's float decode and the pairs GEMV at M = 1, kernels alone.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 150 python3 gemv_sweep.py sweep74_mma_pair_table.json $OUT/sweep74.json > $OUT/sweep74.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep74.log; grep ERROR $OUT/sweep74.log | cut -c1-300; date -u +%H:%M:%S
cat $OUT/sweep74.log | cut -c1-170
