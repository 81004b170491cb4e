#!/usr/bin/env bash
# GPU run 144 (2026-11-28, session 28): qkgen bench, the rest of run 142's summary:
#  D: gemv, the bitsandbytes rows and the int rows, f16 x, 4096 x 14336, M = 1 and 8, pinned to CPUs
#     0-3 while llama.cpp's test-backend-ops builds on CPUs 4-15; then
#  E: gemv, the super-block rows (K-quants, MXFP4), f32 x (llama.cpp's activations), 4096 x 14336,
#     M = 1 and 8, with llama.cpp's MUL_MAT rows.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
taskset -c 4-15 bash -c 'source .gpu/peers.sh && wait $PEERS_PID' > $OUT/peers.log 2>&1 &
BUILD=$!
plot() { python3 -c "import matplotlib" 2>/dev/null && echo "--plot $OUT/$1.png"; }
bench() {  # name timeout args...
  local name=$1 t=$2; shift 2; local s=$(date +%s)
  timeout $t "$@" --no-compile-times --no-progress --json $OUT/$name.json --markdown $OUT/$name.md $(plot $name) \
    > $OUT/$name.log 2>&1
  echo "$name rc $? in $(( $(date +%s) - s )) s"; grep -E "^Errors|^- .*(error|failed)" $OUT/$name.md | head -5
}
bench D 200 taskset -c 0-3 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1,8 --dtypes f16 \
  --formats nf4:nested,fp4:nested,nf4:plain,int4:row,int8:row,blockwise8
wait $BUILD; echo "build rc $? $(date -u +%H:%M:%S)"; tail -2 /tmp/tbo-build.log
bench E 300 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1,8 --dtypes f32 \
  --formats q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4,nvfp4 --llamacpp /tmp/tbo/bin/test-backend-ops
rm -f $OUT/setup.log $OUT/peers.log $OUT/D.log
date -u +%H:%M:%S
