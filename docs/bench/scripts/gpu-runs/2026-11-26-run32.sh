#!/usr/bin/env bash
# GPU run 32 (2026-11-26): the final tree: the GPU suite, compute-sanitizer, the device quantizers
# (quantbench: the new MXFP4/NVFP4 search), and the int8dot team shapes of the 16-element sub-block
# rows (sweep 15, f32 x).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
timeout 130 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 60 python3 quantbench.py $OUT/quantbench.json > $OUT/bench.log 2>&1
echo "quantbench rc $?"; date -u +%H:%M:%S
timeout 50 python3 gemv_sweep.py sweep15_teams.json $OUT/sweep15.json >> $OUT/bench.log 2>&1
echo "sweep15 rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
