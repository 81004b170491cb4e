#!/usr/bin/env bash
# GPU run 194 (2026-12-02, session 38): gemv_int8frag_sub's prefetch knob (with 8 and 4 warps a
# work-group) against its defaults, kernel alone, every super-block row at M = 1 and 8 (sweep 78);
# nvfp4's public calls, int8dot at M = 1..8 against the int8mma path with W in fragments (where its
# default should change); nvfp4 dequantize and float GEMV before (c8e01fd) and after the UE4M3 decode.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 200 python3 gemv_sweep.py sweep78_frag_sub_prefetch.json /tmp/s78.json > $OUT/run194-sweep78.log 2>&1)
echo "sweep78 rc $?"; cut -c1-150 $OUT/run194-sweep78.log | sed 's/"op": "gemv_int8frag_sub"//'
(cd $S && timeout 120 python3 fragbench.py /tmp/fb.json nvfp4 4,5,6,8 4096x14336 1,2,3,4,5,6,8 fragments > $OUT/run194-nvfp4-paths.log 2>&1)
echo "fragbench rc $?"; cut -c1-100 $OUT/run194-nvfp4-paths.log
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  PYTHONPATH=$pp timeout 100 python3 -m qkgen bench --backend cuda --op dequantize --shapes 8192x8192 --dtypes bf16 \
    --formats nvfp4,mxfp4 --no-compile-times --no-bnb --no-progress --markdown $OUT/run194-deq-$tree.md > /dev/null 2>&1
  echo "deq $tree rc $?"; grep -E "^\| (nvfp4|mxfp4)" $OUT/run194-deq-$tree.md | head -4 | cut -c1-160
  PYTHONPATH=$pp timeout 100 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1 --dtypes f16 \
    --formats nvfp4 --no-compile-times --no-bnb --no-progress --markdown $OUT/run194-gemv-$tree.md > /dev/null 2>&1
  echo "gemv $tree rc $?"; grep -E "^\| nvfp4" $OUT/run194-gemv-$tree.md | head -4 | cut -c1-160
done
date -u +%H:%M:%S
