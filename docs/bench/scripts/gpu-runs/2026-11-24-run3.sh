#!/usr/bin/env bash
# GPU run 3 (2026-11-24): the GPU test suite (no sanitizer), then GGUF GEMV against llama.cpp with this session's defaults.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh
date -u +%H:%M:%S
timeout 290 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gputests.log 2>&1
echo "gpu tests rc $?"; tail -15 $OUT/gputests.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers: $(ls $TBO 2>&1)"
timeout 200 python3 -m qkgen bench --backend cuda --iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 \
  --dtypes f16 --m 1,8 --hot --formats q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q6_k --llamacpp $TBO --host-calls 0 --no-bnb \
  --json $OUT/llama.json --markdown $OUT/llama.md > $OUT/llama.log 2>&1
echo "bench rc $?"; date -u +%H:%M:%S
grep -E "^\| q" $OUT/llama.md | cut -d'|' -f2,6,7,8,11,12,13 
