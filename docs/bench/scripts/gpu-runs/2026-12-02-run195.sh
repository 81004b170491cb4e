#!/usr/bin/env bash
# GPU run 195 (2026-12-02, session 38): q2_k's scales folded into its codes (gemv_int8frag_sub), kernel
# alone before (c8e01fd, .gpu/base) and after, with and without prefetch (sweep 79); public calls of
# q2_k, nvfp4 and mxfp4, int8dot against the int8mma path with W in fragments at M = 1..8 (the
# defaults' least M); the GPU tests of the super-block rows and the fragments kernels' sanitizer run.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 80 python3 gemv_sweep.py sweep79_q2_k_fold.json /tmp/s79-$tree.json > $OUT/run195-sweep79-$tree.log 2>&1)
  echo "sweep79 $tree rc $?"; cut -c1-150 $OUT/run195-sweep79-$tree.log | sed 's/"op": "gemv_int8frag_sub"//'
done
(cd $S && timeout 280 python3 fragbench.py /tmp/fb.json q2_k,nvfp4,mxfp4 2,3,4,5,6,8 4096x14336 1,2,3,4,5,6,8 fragments \
   > $OUT/run195-paths.log 2>&1)
echo "fragbench rc $?"; cut -c1-100 $OUT/run195-paths.log
date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu -k "q2_k or nvfp4 or mxfp4" > $OUT/run195-pytest.log 2>&1
echo "gpu tests rc $?"; tail -3 $OUT/run195-pytest.log | cut -c1-300; date -u +%H:%M:%S
