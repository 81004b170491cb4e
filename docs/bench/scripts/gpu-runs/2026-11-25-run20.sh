#!/usr/bin/env bash
# GPU run 20 (2026-11-25): sweep 10 (the mma path, wg 512, on the formats sweep 9 left out, and M = 2, 4), then
# the public mma calls against the float path, bitsandbytes matmul_4bit and dense f16 (mmabench.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 200 python3 gemv_sweep.py sweep10_mma.json $OUT/sweep10.json > $OUT/sweep10.log 2>&1
echo "sweep rc $?"; grep -v "^$" $OUT/sweep10.log; date -u +%H:%M:%S
timeout 300 python3 mmabench.py $OUT/mmabench.json > $OUT/mmabench.log 2>&1
echo "mmabench rc $?"; cat $OUT/mmabench.log | tail -40; date -u +%H:%M:%S
