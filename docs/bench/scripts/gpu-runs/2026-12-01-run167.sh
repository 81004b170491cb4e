#!/usr/bin/env bash
# GPU run 167 (2026-12-01, session 31): public calls, the tree before (7bdc3da, staged in .gpu/base)
# and after the pairs path became CUDA's default for nf4 and fp4 at M = 1 with 16-bit x on weights of
# 4096 rows and more than 2^24 values: qkgen bench on CUDA, bitsandbytes and torch dense beside.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  for spec in "8192x8192 bf16" "4096x14336 f16" "14336x4096 bf16"; do
    set -- $spec; s=$(date +%s)
    (cd /tmp && PYTHONPATH=$pp timeout 110 python3 -m qkgen bench --backend cuda --op gemv --shapes $1 --m 1 \
      --dtypes $2 --formats nf4:nested,fp4:nested,nf4:plain --no-compile-times --no-progress \
      --json /tmp/g-$1-$tree.json --markdown $OUT/run167-gemv-$1-$2-$tree.md > /tmp/g-$1-$tree.log 2>&1)
    echo "$1 $2 $tree rc $? in $(( $(date +%s) - s )) s"; grep -A8 "^## Summary" $OUT/run167-gemv-$1-$2-$tree.md | cut -c1-220
  done
done
date -u +%H:%M:%S
