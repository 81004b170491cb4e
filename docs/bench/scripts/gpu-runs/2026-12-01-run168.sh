#!/usr/bin/env bash
# GPU run 168 (2026-12-01, session 31): the GPU suite on the tree with pairs as CUDA's default (every
# GPU test but the sanitizer's, which run 166 ran with pairs in it), then sweep 65: pairs at the
# default knobs against wg 512, 8 rows a lane group and prefetch, kernel alone.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 330 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log | cut -c1-300; date -u +%H:%M:%S
(cd docs/bench/scripts && timeout 120 python3 gemv_sweep.py sweep65_pairs_shapes.json $OUT/sweep65.json > $OUT/sweep65.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep65.log; grep ERROR $OUT/sweep65.log | cut -c1-300; date -u +%H:%M:%S
