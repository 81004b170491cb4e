#!/usr/bin/env bash
# GPU run 94 (2026-11-27, session 21): NVIDIA OpenCL with word_loads by default: its GPU tests (the
# helpers against numpy, every dequantize and int8dot case), then OpenCL against CUDA on every path of five rows.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 -m pytest -m gpu tests/gpu/test_opencl_nvidia.py -q -p no:cacheprovider > $OUT/opencl_tests.log 2>&1
echo "opencl tests rc $?"; tail -4 $OUT/opencl_tests.log; date -u +%H:%M:%S
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --cold --no-bnb --host-calls 0 --formats q4_0,q4_1,q5_0,q8_0,nf4:nested --dtypes f16 --m 1,8"
for be in opencl cuda; do
  timeout 200 python3 -m qkgen bench $B --backend $be --device NVIDIA > $OUT/bench_$be.log 2>&1; echo "$be rc $?"
  grep -E "^\| [a-z0-9_]+ \|" $OUT/bench_$be.log | awk -F'|' '{print $2,$6,$7,$8,$12,$14}' | sed 's/  */ /g'
done
date -u +%H:%M:%S
