#!/usr/bin/env bash
# GPU run 174 (2026-12-02, session 32): sweep 71, dequantize to f32 at 4, 2 and 1 turns a work-item
# (cpi) for the table rows, kernel alone, outputs bit-equal.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 150 python3 gemv_sweep.py sweep71_dequant_f32_cpi.json $OUT/sweep71.json > $OUT/sweep71.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep71.log; grep ERROR $OUT/sweep71.log | cut -c1-300; date -u +%H:%M:%S
date -u +%H:%M:%S
