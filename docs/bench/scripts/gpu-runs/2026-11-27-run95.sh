#!/usr/bin/env bash
# GPU run 95 (2026-11-27, session 21): the session's last tree (the quantizer's lanes, NVIDIA OpenCL's
# PTX f16 helpers and word loads, gemv_mma's two tiles with f32 x at M = 8): compute-sanitizer, the
# GPU suite, then public calls with f32 x at M = 1 and 8 on the rows whose defaults moved.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
timeout 300 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 90 python3 pathbench.py $OUT/paths_f32.json nf4,fp4,int4,int8,blockwise8 4096x14336 f32 1,8 none > $OUT/paths_f32.log 2>&1; echo "paths rc $?"
cut -c1-120 $OUT/paths_f32.log
date -u +%H:%M:%S
