#!/usr/bin/env bash
# GPU run 160 (2026-11-28, session 30): public calls, the tree before (9448151, staged in .gpu/base) and
# after the M = 1 float GEMV decoded 8 elements at a time with 4 rows a lane group in teams of 4
# (runtime.paths.FLOAT_M1_KNOBS, CUDA f16/bf16 x: nf4, fp4, int8): qkgen bench on CUDA (bitsandbytes
# beside), and NVIDIA's OpenCL float path at M = 1 (no knobs there: the new decode at the op's defaults).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 100 python3 -m qkgen bench --backend cuda --op gemv --shapes 8192x8192 --m 1,8 \
    --dtypes bf16 --formats nf4:nested,fp4:nested,nf4:plain --no-compile-times --no-progress \
    --json /tmp/g$tree.json --markdown $OUT/run160-gemv-8192-bf16-$tree.md > /tmp/g$tree.log 2>&1)
  echo "cuda 8192 $tree rc $? in $(( $(date +%s) - s )) s"; grep -A8 "^## Summary" $OUT/run160-gemv-8192-bf16-$tree.md | cut -c1-200
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 100 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1 \
    --dtypes f16 --formats nf4:nested,fp4:nested,nf4:plain,int8:row,int4:row --no-compile-times --no-progress \
    --json /tmp/h$tree.json --markdown $OUT/run160-gemv-4096-f16-$tree.md > /tmp/h$tree.log 2>&1)
  echo "cuda 4096 $tree rc $? in $(( $(date +%s) - s )) s"; grep -A9 "^## Summary" $OUT/run160-gemv-4096-f16-$tree.md | cut -c1-200
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 80 python3 -m qkgen bench --backend opencl --device NVIDIA --op gemv --shapes 4096x14336 \
    --m 1 --dtypes f16 --formats nf4:nested,int8:row,q4_0 --no-bnb --host-calls 0 --no-compile-times \
    --no-progress --json /tmp/o$tree.json --markdown $OUT/run160-opencl-$tree.md > /tmp/o$tree.log 2>&1)
  echo "opencl $tree rc $? in $(( $(date +%s) - s )) s"; grep -A6 "^## Summary" $OUT/run160-opencl-$tree.md | cut -c1-200; tail -3 /tmp/o$tree.log
done
date -u +%H:%M:%S
