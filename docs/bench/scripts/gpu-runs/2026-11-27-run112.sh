#!/usr/bin/env bash
# GPU run 112 (2026-11-27, session 24): the M the default-path tables had not timed for the super-block
# rows: CUDA q2_k and mxfp4 at M = 5, 6, 7 (int8mma from M = 8 so far), NVIDIA's OpenCL q2_k..q6_k and
# mxfp4 at M = 2, 3 (W in fragments on the int8mma path there now); f16 x, public calls, cold and hot.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --no-bnb --host-calls 0 --dtypes f16"
show() { grep -E "^\| [a-z0-9_]+ \|" $1 | awk -F'|' '{print $2,$6,$7,$11,$12,$13}' | sed 's/  */ /g' | grep -v " torch "; }
timeout 200 python3 -m qkgen bench $B --backend cuda --formats q2_k,mxfp4 --m 5,6,7 --json $OUT/cuda.json \
  --markdown $OUT/cuda.md > $OUT/cuda.log 2>&1; echo "cuda rc $?"; show $OUT/cuda.log; date -u +%H:%M:%S
timeout 250 python3 -m qkgen bench $B --backend opencl --device NVIDIA --formats q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4 --m 2,3 \
  --json $OUT/ocl.json --markdown $OUT/ocl.md > $OUT/ocl.log 2>&1; echo "opencl rc $?"; show $OUT/ocl.log; date -u +%H:%M:%S
