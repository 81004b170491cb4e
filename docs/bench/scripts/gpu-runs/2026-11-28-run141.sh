#!/usr/bin/env bash
# GPU run 141 (2026-11-28, session 28): the GPU suite on the tree with the deferred cuMemFree (a
# DeviceBuffer dropped during a torch graph capture is freed after it), then a small qkgen bench to
# size the full one.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1
timeout 300 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/suite.log 2>&1
echo "suite rc $?"; tail -3 $OUT/suite.log; grep -E "^FAILED|^ERROR" $OUT/suite.log | head; date -u +%H:%M:%S
s=$(date +%s)
timeout 150 python3 -m qkgen bench --backend cuda --op gemv --formats q4_0,nf4:nested --shapes 4096x14336 --m 1,8 \
  --dtypes f16 --no-compile-times --no-progress --json $OUT/bench.json --markdown $OUT/bench.md > $OUT/bench.log 2>&1
echo "bench rc $? in $(( $(date +%s) - s )) s"; tail -5 $OUT/bench.log; date -u +%H:%M:%S
