#!/usr/bin/env bash
# GPU run 55 (2026-11-26): `qkgen bench` with its new int8mma and mma rows (GemvPath) on the H200, and
# the GPU tests of the bench's CUDA timing and of the int8mma path.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -m gpu tests/test_bench_gpu_timing.py tests/gpu/test_int8mma_gpu.py -q -p no:cacheprovider > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/tests.log; date -u +%H:%M:%S
timeout 170 python3 -m qkgen bench --backend cuda --op gemv --formats q4_0,q5_0,q8_0 --shapes 4096x14336 --m 1,8 \
  --dtypes f32 --no-bnb --no-compile-times --iters 5 --no-progress --json $OUT/bench.json --markdown $OUT/bench.md > $OUT/bench.log 2>&1
echo "bench rc $?"; tail -5 $OUT/bench.log; grep -E "^\| q" $OUT/bench.md | cut -c1-220 | head -40; date -u +%H:%M:%S
