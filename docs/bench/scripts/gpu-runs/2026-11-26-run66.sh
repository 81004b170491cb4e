#!/usr/bin/env bash
# GPU run 66 (2026-11-26): the tree with x in fragments and the int8mma defaults of run 64: the GPU
# suite, and qkgen check on NVIDIA's OpenCL for the legacy rows (gemv_int8frag, quantize_q8_1 in both
# layouts).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 400 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
for f in q4_0 q5_1 q8_0; do
  timeout 60 python3 -m qkgen check -b opencl -d NVIDIA --format $f --no-progress > $OUT/check_$f.log 2>&1
  echo "check $f rc $?"; grep -E "int8frag|quantize_q8_1|passed" $OUT/check_$f.log
done
date -u +%H:%M:%S
