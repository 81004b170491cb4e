#!/usr/bin/env bash
# GPU run 198 (2026-12-03, session 38): gemv_int8frag_sub with the integer sub-block scales applied
# to each chunk's integer sums and d (dmin) once a block (q3_k..q6_k), kernel alone before (the
# previous commit, .gpu/base2) and after (sweep 80); public calls at M = 1, 3, 4, 8; their GPU tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base2 new; do
  pp=${PYTHONPATH:-}; [ $tree = base2 ] && pp=$PWD/.gpu/base2:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 80 python3 gemv_sweep.py sweep80_frag_sub_by_block.json /tmp/s80-$tree.json > $OUT/run198-sweep80-$tree.log 2>&1)
  echo "sweep80 $tree rc $?"; cut -c1-130 $OUT/run198-sweep80-$tree.log | sed 's/"op": "gemv_int8frag_sub"//'
done
for tree in base2 new; do
  pp=${PYTHONPATH:-}; [ $tree = base2 ] && pp=$PWD/.gpu/base2:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 100 python3 fragbench.py /tmp/fb-$tree.json q4_k,q5_k 3,4,8 4096x14336 1 fragments > $OUT/run198-paths-$tree.log 2>&1)
  echo "fragbench $tree rc $?"; cut -c1-100 $OUT/run198-paths-$tree.log
done
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_int8mma_gpu.py tests/gpu/test_sanitizer.py \
  -k "q3_k or q4_k or q5_k or q6_k" > $OUT/run198-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run198-pytest.log | cut -c1-300; date -u +%H:%M:%S
