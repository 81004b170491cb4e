#!/usr/bin/env bash
# GPU run 87 (2026-11-27, session 21): the tree after sessions 17-20 (the quantize lanes knob, OpenCL's
# f16 through a byte pair, the SYCL bundle): compute-sanitizer over every kernel family, the GPU
# suite, then the K-quant device quantizer's lanes knob (quantsweep.py qsweep_kquant_lanes.json).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
timeout 300 python3 -m pytest -m gpu tests/gpu -q -x -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 100 python3 quantsweep.py qsweep_kquant_lanes.json $OUT/qsweep_lanes.json > $OUT/qsweep_lanes.log 2>&1
echo "qsweep rc $?"; cut -c1-150 $OUT/qsweep_lanes.log | tail -45
date -u +%H:%M:%S
