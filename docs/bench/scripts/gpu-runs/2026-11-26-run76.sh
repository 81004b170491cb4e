#!/usr/bin/env bash
# GPU run 76 (2026-11-26): the float GEMV's prefetch knob (the next chunk's codes and scales loaded
# before this chunk's are decoded), kernel alone, M = 1: nf4 nested bf16 x at 8192^2 and 4096 x 14336
# with a few shapes, and every kind of row at 4096 x 14336 with f16 and f32 x (sweep 34).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 500 python3 gemv_sweep.py sweep34_gemv_prefetch.json $OUT/sweep34.json > $OUT/sweep34.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep34.log | tail -50
date -u +%H:%M:%S
