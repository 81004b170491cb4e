#!/usr/bin/env bash
# GPU run 37 (2026-11-26): 2 slices at M = 1 for the rows of 32-element sub-blocks (q4_k, q5_k, mxfp4):
# the int8dot GPU tests on that default, and 4 against 2 slices for each (sweep 19, kernel alone).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 python3 -m pytest -q -m gpu tests/gpu -k "int8dot and not sanitizer" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu int8dot tests rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 90 python3 gemv_sweep.py sweep19.json $OUT/sweep19.json > $OUT/bench.log 2>&1
echo "sweep19 rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
