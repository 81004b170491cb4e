#!/usr/bin/env bash
# GPU run 193 (2026-12-02, session 38): NVFP4's UE4M3 scales decoded without a branch and its
# fragments layout one word a chunk (gemv_int8frag_sub looked up and loaded its codes twice), the
# 16-element sub-blocks' shared d_x multiply (q2_k, q3_k, q6_k, nvfp4): public calls before (c8e01fd,
# .gpu/base) and after, int8dot at M = 1 and 8 and the int8mma path with W in fragments at M = 1..8,
# f32 x, 4096 x 14336, cold and hot; then the GPU tests of the super-block rows and the sanitizer.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 170 python3 fragbench.py /tmp/fb-$tree.json nvfp4,q2_k,q3_k,q6_k,mxfp4 1,2,4,8 \
     4096x14336 1,8 fragments > $OUT/run193-frag-$tree.log 2>&1)
  echo "frag $tree rc $?"; cut -c1-100 $OUT/run193-frag-$tree.log
done
date -u +%H:%M:%S
timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu -k "nvfp4 or mxfp4 or q2_k or q3_k or q6_k" \
  > $OUT/run193-pytest.log 2>&1
echo "gpu tests rc $?"; tail -3 $OUT/run193-pytest.log | cut -c1-300; date -u +%H:%M:%S
