#!/usr/bin/env bash
# GPU run 128 (2026-11-28, session 26): NVIDIA's OpenCL (the mma path through PTX), nf4 with f32 x at
# M = 2, 4, 8: `qkgen bench` (events around back-to-back public calls, cold) on the default (x rounded
# in gemv_mma on this kind of device), then with runtime.paths.MMA_ROUND_X patched to round x first
# from M = 2 there too; then `qkgen bench` on CUDA for the same rows at M = 1, 2, 8 (graph replay; its mma
# row is two launches with f32 x at M >= 2 now, which the bench could not bind before bc4603b).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
ARGS="bench -b opencl -d NVIDIA --op gemv --shapes 4096x14336 --formats nf4:plain,nf4:nested --m 2,4,8 --dtypes f32 --cold --no-bnb --no-compile-times --host-calls 0 --no-progress"
timeout 200 python3 -m qkgen $ARGS --markdown $OUT/ocl_in_kernel.md > $OUT/ocl_in_kernel.log 2>&1
echo "in kernel rc $?"; grep -E "^\| nf4" $OUT/ocl_in_kernel.md | cut -c1-200
timeout 200 python3 - $ARGS --markdown $OUT/ocl_round_first.md > $OUT/ocl_round_first.log 2>&1 <<'PY'
import sys, types
import qkgen.runtime.paths as p
p.MMA_ROUND_X = types.MappingProxyType({**p.MMA_ROUND_X, "opencl-nvidia": {"nf4": 2}})
from qkgen.tools.cli import main
sys.exit(main(sys.argv[1:]))
PY
echo "round first rc $?"; grep -E "^\| nf4" $OUT/ocl_round_first.md | cut -c1-200; date -u +%H:%M:%S
# CUDA, the same rows: the bench's mma row is two launches with f32 x now (x rounded first)
timeout 200 python3 -m qkgen bench -b cuda --op gemv --shapes 4096x14336 --formats nf4:plain,nf4:nested --m 1,2,8 --dtypes f32 --cold --no-bnb --no-compile-times --no-progress --markdown $OUT/cuda_f32.md > $OUT/cuda_f32.log 2>&1
echo "cuda rc $?"; grep -E "^\| nf4" $OUT/cuda_f32.md | cut -c1-220; date -u +%H:%M:%S
