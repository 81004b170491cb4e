#!/usr/bin/env bash
# GPU run 23 (2026-11-25): sweep 11, 2-byte-aligned code runs loaded as shifted 4-byte words against 16-bit pairs.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts && timeout 300 python3 sweep11_loads.py $OUT/sweep11.json > $OUT/sweep11.log 2>&1
echo "sweep rc $?"; cat $OUT/sweep11.log | tail -32; date -u +%H:%M:%S
