#!/usr/bin/env bash
# GPU run 172 (2026-12-02, session 32): sweep 69, dequantize's prefetch knob off / on across rows,
# shapes and output types, and the first turn's codes asked of L2 before the tables in the pairs
# GEMV (M = 1) and gemv_mma (M = 8) as source patches; then the dequantize GPU tests (bitsandbytes
# included) and compute-sanitizer memcheck, on the tree with the knob on by default.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 200 python3 gemv_sweep.py sweep69_prefetch.json $OUT/sweep69.json > $OUT/sweep69.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep69.log; grep ERROR $OUT/sweep69.log | cut -c1-300; date -u +%H:%M:%S
timeout 150 python3 -m pytest -m gpu -q tests/gpu/test_cuda_gpu.py tests/gpu/test_bnb_gpu.py tests/gpu/test_large_offsets_gpu.py -p no:cacheprovider > $OUT/pytest_deq.log 2>&1
echo "tests rc $?"; tail -3 $OUT/pytest_deq.log | cut -c1-300; date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -3 $OUT/sanitizer.log | cut -c1-300; date -u +%H:%M:%S
