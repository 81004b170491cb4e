#!/usr/bin/env bash
# GPU run 122 (2026-11-27, session 25): host time per call on the final tree (hostbench.py: 2000
# back-to-back calls on torch CUDA tensors, one synchronize, min / median of 5 rounds, 4096 x 4096, M = 1).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 hostbench.py s25 > $OUT/host.log 2>&1; echo "hostbench rc $?"
cat $OUT/host.log | head -60
date -u +%H:%M:%S
