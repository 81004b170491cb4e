#!/usr/bin/env bash
# GPU run 176 (2026-12-02, session 32): on the tree with f32 chunks of one 16-byte store (4-bit rows: 2
# code bytes), sweep 73: the new defaults against the old chunks (ept 8, or 8 for int rows with row or
# group scales) for f32 outputs, kernel alone; then the dequantize GPU tests and memcheck.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 80 python3 gemv_sweep.py sweep73_f32_defaults.json $OUT/sweep73.json > $OUT/sweep73.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep73.log; grep ERROR $OUT/sweep73.log | cut -c1-300; date -u +%H:%M:%S
timeout 70 python3 -m pytest -m gpu -q tests/gpu/test_cuda_gpu.py tests/gpu/test_bnb_gpu.py tests/gpu/test_large_offsets_gpu.py -p no:cacheprovider > $OUT/pytest_deq.log 2>&1
echo "tests rc $?"; tail -3 $OUT/pytest_deq.log | cut -c1-300; date -u +%H:%M:%S
timeout 140 python3 -m pytest -m gpu -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -3 $OUT/sanitizer.log | cut -c1-300; date -u +%H:%M:%S
