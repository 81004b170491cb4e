#!/usr/bin/env bash
# GPU run 171 (2026-12-02, session 32): sweep 68, dequantize with an L2 prefetch of the codes one or
# two turns ahead (guarded at the tensor's end), or all turns' at the start, as source patches;
# every row with turns (cpi > 1), kernel alone, outputs bit-equal.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 400 python3 gemv_sweep.py sweep68_dequant_l2.json $OUT/sweep68.json > $OUT/sweep68.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep68.log; grep ERROR $OUT/sweep68.log | cut -c1-300; date -u +%H:%M:%S
