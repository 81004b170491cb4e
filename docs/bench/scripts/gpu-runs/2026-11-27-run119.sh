#!/usr/bin/env bash
# GPU run 119 (2026-11-27, session 25, on the final tree; run 89 repeated on an H100): public qkgen.gemv calls on the default paths (pathbench.py, graph
# replay, cold and hot) for every row at M = 1 and 8, 4096 x 14336 (the goal
# M = 8 <= 1.5x M = 1, % of copy at M = 1; f16 and f32 x); then 8192 x 8192 against torch's dense product.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
ALL=q4_0,q4_1,q5_0,q5_1,q8_0,q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4,nvfp4,nf4,fp4,int4,int8,blockwise8
for dt in f16 f32; do
  timeout 170 python3 pathbench.py $OUT/paths_$dt.json $ALL 4096x14336 $dt 1,8 none > $OUT/paths_$dt.log 2>&1; echo "$dt rc $?"
  cut -c1-120 $OUT/paths_$dt.log
  date -u +%H:%M:%S
done
for dt in bf16 f16; do
  timeout 80 python3 pathbench.py $OUT/dense_$dt.json dense,nf4,q4_0,q4_k,q8_0 8192x8192 $dt 1,8 none > $OUT/dense_$dt.log 2>&1; echo "dense $dt rc $?"
  cut -c1-120 $OUT/dense_$dt.log
done
date -u +%H:%M:%S
