#!/usr/bin/env bash
# GPU run 26 (2026-11-25): the mma path with bf16 x (bf16 weights and mma): its GPU tests, then nf4 nested
# against bitsandbytes and dense bf16 (mmabench.py) and public calls on every path with bf16 x (pathbench.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_gemv_mma_gpu.py -p no:cacheprovider > $OUT/gpu_mma.log 2>&1
echo "gpu mma tests rc $?"; tail -2 $OUT/gpu_mma.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 60 python3 mmabench.py $OUT/mmabench_bf16.json 8192x8192 bf16 > $OUT/mmabench_bf16.log 2>&1
echo "mmabench rc $?"; cat $OUT/mmabench_bf16.log; date -u +%H:%M:%S
timeout 120 python3 pathbench.py $OUT/pathbench_bf16.json q4_0,q4_1,q5_1,nf4,fp4,int4 4096x14336 bf16 > $OUT/pathbench_bf16.log 2>&1
echo "pathbench rc $?"; cat $OUT/pathbench_bf16.log; date -u +%H:%M:%S
