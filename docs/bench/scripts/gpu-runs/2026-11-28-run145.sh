#!/usr/bin/env bash
# GPU run 145 (2026-11-28, session 28): dequantize of the int rows with the scale stepped along the
# chunk (no division by cols per element): the GPU tests of int dequantize (CUDA and NVIDIA OpenCL,
# bit-exact against the reference), then qkgen bench before (the tree before the change, staged in
# .gpu/base) and after, in one run.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 120 python3 -m pytest -m gpu tests/gpu -q -p no:cacheprovider -k "dequantize and (int4 or int8 or int2 or int1)" \
  > $OUT/tests.log 2>&1
echo "tests rc $?"; tail -2 $OUT/tests.log
for tree in base new; do
  pp=$PYTHONPATH; [ $tree = base ] && pp=$PWD/.gpu/base:$PYTHONPATH
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 100 python3 -m qkgen bench --backend cuda --op dequantize --shapes 8192x8192,4096x14336 \
    --dtypes bf16 --formats int4:row,int8:row,int4:group@128 --no-compile-times --no-progress --iters 20 \
    --json /tmp/$tree.json --markdown $OUT/deq_$tree.md > /tmp/$tree.log 2>&1)
  echo "$tree rc $? in $(( $(date +%s) - s )) s"; grep -E "^\| int" $OUT/deq_$tree.md | cut -d'|' -f2-9 | head -6
done
date -u +%H:%M:%S
