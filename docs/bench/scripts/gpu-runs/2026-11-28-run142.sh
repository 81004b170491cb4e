#!/usr/bin/env bash
# GPU run 142 (2026-11-28, session 28): qkgen bench on the session's tree, with the summary table of
# each case's default row against bitsandbytes, dense torch and llama.cpp.
#  B: gemv, bf16 x, 8192 x 8192, M = 1 and 8 (bitsandbytes' and dense torch's own dtype), and
#  C: dequantize to bf16, 8192 x 8192, both pinned to CPUs 0-3 while llama.cpp's test-backend-ops
#     builds on CPUs 4-15; then
#  A: gemv, the legacy GGUF rows, f32 x (llama.cpp's activations), 4096 x 14336, M = 1 and 8, with
#     llama.cpp's MUL_MAT rows.
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
bench B 200 taskset -c 0-3 python3 -m qkgen bench --backend cuda --op gemv --shapes 8192x8192 --m 1,8 --dtypes bf16 \
  --formats nf4:nested,fp4:nested,nf4:plain,int4:row,blockwise8,q4_0,q4_k,q8_0
bench C 120 taskset -c 0-3 python3 -m qkgen bench --backend cuda --op dequantize --shapes 8192x8192 --dtypes bf16
wait $BUILD; echo "build rc $? $(date -u +%H:%M:%S)"; tail -2 /tmp/tbo-build.log
bench A 240 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1,8 --dtypes f32 \
  --formats q4_0,q4_1,q5_0,q5_1,q8_0 --llamacpp /tmp/tbo/bin/test-backend-ops
date -u +%H:%M:%S
