#!/usr/bin/env bash
# GPU run 62 (2026-11-26): gemv_int8frag (x in fragments), kernel alone, whether occupancy is the
# lever: min_groups (CUDA launch bounds: registers capped so that many work-groups fit an SM) with
# work-groups of 8, 16 and 32 warps, M = 4 and 8, f32 x, 4096 x 14336, every row. Every capped case
# spilled and was slower: the knob (an argument of the dialects' kernel signature) was removed again.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 450 python3 gemv_sweep.py sweep30_int8frag_occupancy.json $OUT/sweep30.json > $OUT/sweep30.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep30.log | sed 's/"op": "gemv_int8frag", //' | tail -64
date -u +%H:%M:%S
