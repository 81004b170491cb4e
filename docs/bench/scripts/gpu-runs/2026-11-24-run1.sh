#!/usr/bin/env bash
# GPU run 1 (2026-11-24): sweep 6, K-quants against llama.cpp, sanitizer over every family.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh
date -u +%H:%M:%S
timeout 200 python3 docs/bench/scripts/gemv_sweep.py docs/bench/scripts/sweep6_teams_kquant.json $OUT/sweep6.json > $OUT/sweep6.log 2>&1
date -u +%H:%M:%S; tail -3 $OUT/sweep6.log
wait $PEERS_PID; echo "peers rc $? $(ls -la $TBO 2>&1)"; tail -2 /tmp/tbo-build.log
date -u +%H:%M:%S
timeout 150 python3 -m qkgen bench --backend cuda --iters 10 --no-compile-times --no-progress --op gemv \
  --shapes 4096x14336 --dtypes f16 --m 1,8 --formats q4_k,q6_k --llamacpp $TBO --host-calls 0 \
  --json $OUT/kq.json --markdown $OUT/kq.md > $OUT/kq.log 2>&1
echo "bench rc $?"; date -u +%H:%M:%S
timeout 170 python3 -m pytest -m gpu -q -x tests/gpu/test_sanitizer.py -k memcheck > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
echo ==== sweep; cat $OUT/sweep6.log
echo ==== kq; cat $OUT/kq.md | head -60
