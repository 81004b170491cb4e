#!/usr/bin/env bash
# GPU run 71 (2026-11-26): NVIDIA's OpenCL (warps and mma through PTX; its int8mma path now reads W in
# fragments, runtime.paths' "opencl-nvidia" kind): every path of the legacy GGUF rows and nf4 nested
# at M = 1, 2, 4, 8, f16 x, for its default-path tables; f32 x at M = 2 and 8 for the same.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --cold --no-bnb --host-calls 0 --backend opencl --device NVIDIA"
timeout 300 python3 -m qkgen bench $B --formats q4_0,q4_1,q5_0,q5_1,q8_0,nf4:nested --dtypes f16 --m 1,2,4,8 > $OUT/bench_f16.log 2>&1; echo "f16 rc $?"
timeout 200 python3 -m qkgen bench $B --formats q4_0,q4_1,q5_0,q5_1,q8_0,nf4:nested --dtypes f32 --m 2,8 > $OUT/bench_f32.log 2>&1; echo "f32 rc $?"
for f in f16 f32; do grep -E "^\| [a-z0-9_]+ \|" $OUT/bench_$f.log | awk -F'|' '{print $2,$6,$7,$12}' | sed 's/  */ /g'; done
date -u +%H:%M:%S
