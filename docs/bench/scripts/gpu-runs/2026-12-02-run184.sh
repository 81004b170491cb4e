#!/usr/bin/env bash
# GPU run 184 (2026-12-02, session 34): this tree's public calls (programmatic dependent launch kept,
# early_lines dropped after run 183). The 4-bit bitsandbytes-style rows (one launch a call; session
# 33's pair table at M = 8), whose run-180 reports were lost; the super-block rows, mxfp4, nf4 nested
# and int4 row with f32 x (two launches a call); the GGUF rows against llama.cpp's test-backend-ops
# built in the background meanwhile (peers.sh); last, 19e4f18 (.gpu/base) on the f32 set again.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
source .gpu/peers.sh > /tmp/peers.log 2>&1
bench() {  # tree, tag, shape, dtype, formats, extra options
  local pp=${PYTHONPATH:-}; [ $1 != new ] && pp=$PWD/.gpu/$1:${PYTHONPATH:-}
  local s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 150 python3 -m qkgen bench --backend cuda --op gemv --shapes $3 --m 1,8 \
    --dtypes $4 --formats $5 ${6:-} --no-compile-times --no-progress \
    --json /tmp/$2-$1.json --markdown $OUT/run184-$2-$1.md > /tmp/$2-$1.log 2>&1)
  echo "$2 $1 rc $? in $(( $(date +%s) - s )) s"; grep -A20 "^## Summary" $OUT/run184-$2-$1.md | tail -n +5 | grep "^|" | cut -c1-230
}
bench new bnb-f16 4096x14336 f16 nf4:nested,fp4:nested,nf4:plain,int4:row
bench new bnb-bf16 8192x8192 bf16 nf4:nested,fp4:nested,int4:row
bench new sub-f32 4096x14336 f32 q4_k,q6_k,mxfp4,nf4:nested,int4:row
date -u +%H:%M:%S; wait $PEERS_PID; echo "peers rc $? $(ls -la $TBO 2>&1 | cut -c1-80)"; date -u +%H:%M:%S
bench new gguf-f32 4096x14336 f32 q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q6_k "--no-bnb --llamacpp $TBO"
bench base sub-f32 4096x14336 f32 q4_k,q6_k,mxfp4,nf4:nested,int4:row
date -u +%H:%M:%S
