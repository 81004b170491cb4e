#!/usr/bin/env bash
# GPU run 85 (2026-11-26): public calls on this session's defaults through qkgen bench (graph replay,
# cold): q3_k and q6_k at M = 1 and 8 (x in planes at M = 8), fp4 nested with f32 x (the mma path),
# 4096 x 14336.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --cold --no-bnb --host-calls 0 --backend cuda"
timeout 250 python3 -m qkgen bench $B --formats q3_k,q6_k --dtypes f16,f32 --m 1,8 > $OUT/bench_k.log 2>&1; echo "k rc $?"
timeout 200 python3 -m qkgen bench $B --formats fp4:nested,nf4:nested --dtypes f32 --m 1,2 > $OUT/bench_fp4.log 2>&1; echo "fp4 rc $?"
grep -E "^\|" $OUT/bench_k.log $OUT/bench_fp4.log | cut -c1-200 | head -60
date -u +%H:%M:%S
