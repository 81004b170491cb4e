#!/usr/bin/env bash
# GPU run 102 (2026-11-27, session 22): run 101's bench on CUDA, the same machine kind, for NVIDIA
# OpenCL's default paths (run 101) against CUDA's (every path of the legacy rows and nf4 nested,
# M = 1, 2, 4, 8, f16 x, 4096 x 14336, cold).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --cold --no-bnb --host-calls 0 --backend cuda"
timeout 240 python3 -m qkgen bench $B --formats q4_0,q4_1,q5_0,q5_1,q8_0,nf4:nested --dtypes f16 --m 1,2,4,8 > $OUT/bench_cuda_f16.log 2>&1; echo "cuda rc $?"
grep -E "^\| [a-z0-9_]+ \|" $OUT/bench_cuda_f16.log | awk -F'|' '{print $2,$6,$7,$12}' | sed 's/  */ /g'
date -u +%H:%M:%S
