#!/usr/bin/env bash
# GPU run 138 (2026-11-28, session 27): gemv's out= (the caller's y tensor): its GPU tests, the
# stream and graph tests, and host time with and without it (hostout.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -m gpu tests/gpu/test_gemv_out.py tests/gpu/test_cuda_graph.py -q -p no:cacheprovider > $OUT/out_tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/out_tests.log; grep -E "^(FAILED|E )" $OUT/out_tests.log | head -20
(cd docs/bench/scripts && timeout 150 python3 hostout.py $OUT/hostout.json 2>&1 | grep -v Warn | tee $OUT/hostout.log)
date -u +%H:%M:%S
