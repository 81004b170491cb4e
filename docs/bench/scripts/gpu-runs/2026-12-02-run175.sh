#!/usr/bin/env bash
# GPU run 175 (2026-12-02, session 32): sweep 72, dequantize to f32 with chunks of 4 elements (one
# 16-byte store a chunk, a warp's stores contiguous) against the chunks of 8 (two 16-byte stores,
# every other 16 bytes a store instruction), kernel alone, outputs bit-equal.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 150 python3 gemv_sweep.py sweep72_f32_stores.json $OUT/sweep72.json > $OUT/sweep72.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep72.log; grep ERROR $OUT/sweep72.log | cut -c1-300; date -u +%H:%M:%S
