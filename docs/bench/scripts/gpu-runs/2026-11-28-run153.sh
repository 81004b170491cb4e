#!/usr/bin/env bash
# GPU run 153 (2026-11-28, session 29): BENCHMARKS.md's 4096 x 14336 bitsandbytes rows (f16 x, M = 1
# and 8) again after e79f735 (code tables in read-only global memory).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
s=$(date +%s)
timeout 120 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1,8 --dtypes f16 \
  --formats nf4:nested,fp4:nested,nf4:plain --no-compile-times --no-progress --json /tmp/b.json \
  --markdown $OUT/run153-gemv-bnb-f16.md > /tmp/b.log 2>&1
echo "bench rc $? in $(( $(date +%s) - s )) s"; grep -A9 "^## Summary" $OUT/run153-gemv-bnb-f16.md | cut -c1-220
date -u +%H:%M:%S
