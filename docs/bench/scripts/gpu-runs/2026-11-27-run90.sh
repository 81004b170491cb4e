#!/usr/bin/env bash
# GPU run 90 (2026-11-27, session 21): gemv_mma's tiles and wg with f32 x at M = 8 (sweep 42: at M = 8
# every work-group of 16 rows reads all of x, twice the bytes in f32), kernel alone, 4096 x 14336;
# then NVIDIA's OpenCL against CUDA on every path of q4_0 and nf4 nested, f16 x, M = 1 and 8 (the
# OpenCL f16 helpers through byte pairs since d4969aa).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 200 python3 gemv_sweep.py sweep42_mma_f32_tiles.json $OUT/sweep42.json > $OUT/sweep42.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep42.log
cd ../../..
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --cold --no-bnb --host-calls 0 --formats q4_0,nf4:nested --dtypes f16 --m 1,8"
for be in opencl cuda; do
  timeout 150 python3 -m qkgen bench $B --backend $be --device NVIDIA > $OUT/bench_$be.log 2>&1; echo "$be rc $?"
  grep -E "^\| [a-z0-9_]+ \|" $OUT/bench_$be.log | awk -F'|' '{print $2,$6,$7,$8,$12,$14}' | sed 's/  */ /g'
done
date -u +%H:%M:%S
