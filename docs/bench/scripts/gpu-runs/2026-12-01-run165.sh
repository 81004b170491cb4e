#!/usr/bin/env bash
# GPU run 165 (2026-12-01, session 31): sweep 63, the M = 1 float GEMV by byte pairs (pairs=True,
# c226bbb) at several knob sets against the float decode at CUDA's knobs, kernel alone; then the
# pairs GPU tests and compute-sanitizer memcheck over every kernel family (the pairs path included).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1 | cut -c1-60
(cd docs/bench/scripts && timeout 200 python3 gemv_sweep.py sweep63_pairs.json $OUT/sweep63.json > $OUT/sweep63.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep63.log; grep ERROR $OUT/sweep63.log | cut -c1-300; date -u +%H:%M:%S
timeout 150 python3 -m pytest -q tests/gpu/test_cuda_ops.py -k pairs -p no:cacheprovider > $OUT/pytest_pairs.log 2>&1
echo "pairs tests rc $?"; tail -3 $OUT/pytest_pairs.log; date -u +%H:%M:%S
timeout 200 python3 -m pytest -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
