#!/usr/bin/env bash
# GPU run 59 (2026-11-26): x's q8_1 blocks in a fragments layout too (gemv_int8frag's x loads fill
# whole sectors). The int8mma GPU tests, then fragbench.py before (old/: the tree of the last
# commit, through PYTHONPATH) and after, in one run: q4_0..q8_0, M = 4 and 8, both W layouts, f32 x.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -m gpu tests/gpu/test_int8mma_gpu.py -q -x > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -3 $OUT/tests.log; date -u +%H:%M:%S
cd docs/bench/scripts
F=q4_0,q4_1,q5_0,q5_1,q8_0
timeout 170 python3 fragbench.py $OUT/after.json $F 4,8 > $OUT/after.log 2>&1; echo "after rc $?"
PYTHONPATH=$OLDPWD/old timeout 170 python3 fragbench.py $OUT/before.json $F 4,8 > $OUT/before.log 2>&1; echo "before rc $?"
paste -d'|' <(cut -c1-80 $OUT/before.log) <(cut -c1-80 $OUT/after.log)
date -u +%H:%M:%S
