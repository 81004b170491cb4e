#!/usr/bin/env bash
# GPU run 131 (2026-11-28, session 26): programmatic dependent launch (453359f) against the tree before
# it (ecb5cef, staged as .gpu/base) in one run: public qkgen.gemv calls on the default paths
# (pathbench.py, graph-timed, cold and hot, 4096 x 14336; f16 x at M = 1 and 8, f32 x at M = 8 for
# the rows whose mma path rounds x first); then the GPU suite and compute-sanitizer on 453359f.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for tree in base new; do
  pp=$PYTHONPATH; [ $tree != new ] && pp=$PWD/../../../.gpu/$tree:$PYTHONPATH
  PYTHONPATH=$pp timeout 100 python3 pathbench.py $OUT/p16_$tree.json q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q6_k 4096x14336 f16 1,8 none > $OUT/p16_$tree.log 2>&1; echo "$tree f16 rc $?"
  PYTHONPATH=$pp timeout 60 python3 pathbench.py $OUT/p32_$tree.json nf4,int4,q4_0 4096x14336 f32 8 none > $OUT/p32_$tree.log 2>&1; echo "$tree f32 rc $?"
done
paste -d'|' <(cut -c1-75 $OUT/p16_base.log) <(cut -c1-75 $OUT/p16_new.log)
paste -d'|' <(cut -c1-75 $OUT/p32_base.log) <(cut -c1-75 $OUT/p32_new.log)
cd ../../..; date -u +%H:%M:%S
timeout 280 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "FAILED|ERROR" $OUT/gpu_suite.log | head; tail -2 $OUT/gpu_suite.log; date -u +%H:%M:%S
timeout 170 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
# (As run: the device budget ran out at 391 s, after the GPU suite (2379 passed, 1 skipped, on 453359f);
# the sanitizer did not run. 453359f was reverted in de2eb57: the pathbench figures showed no gain.)
