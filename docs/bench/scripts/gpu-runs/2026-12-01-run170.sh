#!/usr/bin/env bash
# GPU run 170 (2026-12-01, session 32): sweep 67, source patches as what-ifs: a table of 256 f32
# pairs for 4-bit table codes (one 64-bit local read a code byte, bit-exact), L2 prefetch of the
# codes 1-4 turns ahead, the nested table read from global memory in dequantize; gemv_mma at M = 4
# and 8, the float and pairs GEMV at M = 1, dequantize, kernel alone.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 400 python3 gemv_sweep.py sweep67_pair64.json $OUT/sweep67.json > $OUT/sweep67.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep67.log; grep ERROR $OUT/sweep67.log | cut -c1-300; date -u +%H:%M:%S
