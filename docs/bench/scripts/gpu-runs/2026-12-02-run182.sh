#!/usr/bin/env bash
# GPU run 182 (2026-12-02, session 33): the pair table over two tiles for f32 x at M = 8 (the pair
# table now takes one tile there): sweep 77; then the mma GPU tests again.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 60 python3 gemv_sweep.py sweep77_f32_tiles.json $OUT/sweep77.json > $OUT/sweep77.log 2>&1)
echo "sweep rc $?"; cut -c1-150 $OUT/sweep77.log
timeout 100 python3 -m pytest -m gpu -q tests/gpu/test_gemv_mma_gpu.py -p no:cacheprovider > $OUT/pytest_mma.log 2>&1
echo "mma tests rc $?"; grep -E "^FAILED" $OUT/pytest_mma.log | head -5; tail -1 $OUT/pytest_mma.log | cut -c1-300; date -u +%H:%M:%S
