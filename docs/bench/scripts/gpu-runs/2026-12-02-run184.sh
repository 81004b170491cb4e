#!/usr/bin/env bash
# GPU run 184 (2026-12-02, session 34): programmatic dependent launch (early_lines dropped after run
# 183) on the other two-launch rows, 19e4f18 (.gpu/base) against this tree, f32 x: the super-block
# rows and mxfp4 (int8dot at M = 1, int8mma at 8), nf4 nested and int4 row (x rounded to f16 by a
# launch of its own at M = 8). Then this tree's public calls on the 4-bit bitsandbytes-style rows
# (one launch a call; session 33's pair table at M = 8), whose run-180 reports were lost.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
bench() {  # tree, tag, shape, dtype, formats
  local pp=${PYTHONPATH:-}; [ $1 != new ] && pp=$PWD/.gpu/$1:${PYTHONPATH:-}
  local s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 150 python3 -m qkgen bench --backend cuda --op gemv --shapes $3 --m 1,8 \
    --dtypes $4 --formats $5 --no-compile-times --no-progress \
    --json /tmp/$2-$1.json --markdown $OUT/run184-$2-$1.md > /tmp/$2-$1.log 2>&1)
  echo "$2 $1 rc $? in $(( $(date +%s) - s )) s"; grep -A14 "^## Summary" $OUT/run184-$2-$1.md | tail -n +5 | cut -c1-200
}
for tree in base new; do bench $tree sub-f32 4096x14336 f32 q4_k,q6_k,mxfp4,nf4:nested,int4:row; done
date -u +%H:%M:%S
bench new bnb-f16 4096x14336 f16 nf4:nested,fp4:nested,nf4:plain,int4:row
bench new bnb-bf16 8192x8192 bf16 nf4:nested,fp4:nested,int4:row
date -u +%H:%M:%S
