#!/usr/bin/env bash
# GPU run 93 (2026-11-27, session 21): why the int8dot path on NVIDIA's OpenCL is 0.4x CUDA's (run 92):
# its two kernels alone on OpenCL, with and without CUDA's knobs (oclprobe.py: quantize_q8_1's
# lane_group, gemv_int8dot's word_loads).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 200 python3 oclprobe.py q4_0,q4_1,q5_0,q8_0,q4_k,q6_k > $OUT/oclprobe.log 2>&1; echo "probe rc $?"
cat $OUT/oclprobe.log | cut -c1-160
date -u +%H:%M:%S
