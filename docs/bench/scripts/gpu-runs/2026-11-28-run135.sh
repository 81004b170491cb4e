#!/usr/bin/env bash
# GPU run 135 (2026-11-28, session 27): after the poison fix (scratch reuse, tree of this commit's
# parent+1): the graph/stream tests and the ops tests, then host time per call on this tree and on
# 7166235 (.gpu/base), two rounds each, alternating, and launchparts.py.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 -m pytest -m gpu tests/gpu/test_cuda_graph.py tests/gpu/test_cuda_ops.py tests/gpu/test_int8mma_gpu.py -q -x -p no:cacheprovider > $OUT/suite.log 2>&1
echo "tests rc $?"; tail -3 $OUT/suite.log; date -u +%H:%M:%S
cd docs/bench/scripts
for round in 1 2; do
  PYTHONPATH=$PWD/../../../.gpu/base:$PYTHONPATH timeout 120 python3 hostbench.py old > $OUT/host_old$round.log 2>&1; echo "old rc $?"
  timeout 120 python3 hostbench.py new > $OUT/host_new$round.log 2>&1; echo "new rc $?"
done
for f in $OUT/host_old1.log $OUT/host_new1.log $OUT/host_old2.log $OUT/host_new2.log; do grep -E "^\[(new|old)\]" $f | cut -c1-140; done
timeout 60 python3 launchparts.py $OUT/lp.json 2>&1 | grep -v Warn > $OUT/lp.log; cat $OUT/lp.log; date -u +%H:%M:%S
