#!/usr/bin/env bash
# GPU run 88 (2026-11-27, session 21): gemv_int8dot's prefetch knob (the next chunk's W loaded before
# this chunk's products) against the defaults, kernel alone, 4096 x 14336, M = 1 and 8 (sweep 41).
# The knob lived in commit e77aefd and was reverted after this run: slower in every case.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 420 python3 gemv_sweep.py sweep41_int8dot_prefetch.json $OUT/sweep41.json > $OUT/sweep41.log 2>&1; echo "sweep rc $?"
cut -c1-170 $OUT/sweep41.log
date -u +%H:%M:%S
