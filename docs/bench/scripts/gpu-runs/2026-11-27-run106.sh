#!/usr/bin/env bash
# GPU run 106 (2026-11-27, session 24, branch kfrag): the super-block rows' public gemv calls on every
# path (float, int8dot, int8mma: W in fragments on CUDA now), f32 x, M = 1, 2, 3, 4, 8, 4096 x 14336,
# cold and hot, both launches of the integer paths counted.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --no-bnb --host-calls 0 --backend cuda"
timeout 330 python3 -m qkgen bench $B --formats q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4,nvfp4 --dtypes f32 --m 1,2,3,4,8 \
  --json $OUT/bench_f32.json --markdown $OUT/bench_f32.md > $OUT/bench_f32.log 2>&1; echo "f32 rc $?"
grep -E "^\| [a-z0-9_]+ \|" $OUT/bench_f32.log | awk -F'|' '{print $2,$6,$7,$11,$12,$13}' | sed 's/  */ /g'
date -u +%H:%M:%S
date -u +%H:%M:%S
