#!/usr/bin/env bash
# GPU run 78 (2026-11-26): (1) dequantize to bf16, 8192^2, nf4/fp4 nested and int4 row over ept, cpi
# and wg (the 90%-of-copy goal: 86-87% at the defaults); (2) the float GEMV's prefetch at M = 1 with
# f32 x, nf4/fp4 nested and int4 row/group, at three shapes (sweep 36, kernel alone).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 500 python3 gemv_sweep.py sweep36_dequant_prefetch.json $OUT/sweep36.json > $OUT/sweep36.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep36.log | sed 's/"op": "dequantize", //' | tail -50
date -u +%H:%M:%S
