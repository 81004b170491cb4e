#!/usr/bin/env bash
# GPU run 6 (2026-11-24): Llama-3-8B-shaped decode step; K-quant paths with f32 x.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 240 python3 -m pytest -q -m gpu tests/gpu/test_model_gpu.py -k decode_time -s -p no:cacheprovider > $OUT/decode.log 2>&1
echo "decode rc $?"; grep -E "decode ms|passed|failed" $OUT/decode.log; date -u +%H:%M:%S
timeout 150 python3 -m qkgen bench --iters 10 --no-compile-times --no-progress --backend cuda --op gemv --shapes 4096x14336 \
  --formats q4_k,q6_k --dtypes f32,bf16 --m 1,8 --cold --no-bnb --host-calls 0 --markdown $OUT/kqf32.md --json $OUT/kqf32.json > $OUT/kqf32.log 2>&1
echo "bench rc $?"; date -u +%H:%M:%S
grep -E "^\| q" $OUT/kqf32.md | cut -d'|' -f2,4,6,7,8,11,12,13
