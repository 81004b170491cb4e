#!/usr/bin/env bash
# GPU run 123 (2026-11-28, session 26): the mma path with f32 x rounding x to f16 once (round_to_f16,
# then gemv_mma reading the f16 words) against rounding it in every work-group (roundbench.py: M = 1-8,
# public-call bindings, graph-timed, cold and hot, ys compared bit for bit), then the mma GPU tests
# (every gemv_mma variant, the rounded f32 form included; torch and CUDA-graph capture).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 240 python3 roundbench.py $OUT/round.json nf4,fp4,int4,int8,blockwise8 4096x14336 1,2,3,4,6,8 > $OUT/round.log 2>&1
echo "round rc $?"; cut -c1-150 $OUT/round.log
cd ../../..; date -u +%H:%M:%S
timeout 250 python3 -m pytest -m gpu tests/gpu/test_gemv_mma_gpu.py -q -p no:cacheprovider > $OUT/gpu_mma.log 2>&1
echo "mma tests rc $?"; tail -4 $OUT/gpu_mma.log; date -u +%H:%M:%S
