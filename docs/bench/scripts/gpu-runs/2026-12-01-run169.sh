#!/usr/bin/env bash
# GPU run 169 (2026-12-01, session 31): sweep 66, int4 (row and group scales) by byte pairs (its code
# values in the pair table) against its float path at the op's defaults (CUDA's for int4 with 16-bit
# x), kernel alone; then the pairs GPU tests (int4 added) and compute-sanitizer memcheck.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 100 python3 gemv_sweep.py sweep66_pairs_int4.json $OUT/sweep66.json > $OUT/sweep66.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep66.log; grep ERROR $OUT/sweep66.log | cut -c1-300; date -u +%H:%M:%S
timeout 100 python3 -m pytest -m gpu -q tests/gpu/test_cuda_ops.py -k pairs -p no:cacheprovider > $OUT/pytest_pairs.log 2>&1
echo "pairs tests rc $?"; tail -3 $OUT/pytest_pairs.log | cut -c1-300; date -u +%H:%M:%S
timeout 190 python3 -m pytest -m gpu -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -3 $OUT/sanitizer.log | cut -c1-300; date -u +%H:%M:%S
