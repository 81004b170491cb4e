#!/usr/bin/env bash
# GPU run 166 (2026-12-01, session 31): sweep 64, pairs at rpw 4, wg 256 with 1, 2, 4, 8 slices across
# N (sweep 63 found the best slices follow the row count: one wave of teams); then the pairs GPU
# tests and compute-sanitizer memcheck (run 165 ran them without -m gpu: deselected).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 200 python3 gemv_sweep.py sweep64_pairs_slices.json $OUT/sweep64.json > $OUT/sweep64.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep64.log; grep ERROR $OUT/sweep64.log | cut -c1-300; date -u +%H:%M:%S
timeout 150 python3 -m pytest -m gpu -q tests/gpu/test_cuda_ops.py -k pairs -p no:cacheprovider > $OUT/pytest_pairs.log 2>&1
echo "pairs tests rc $?"; tail -3 $OUT/pytest_pairs.log; date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
