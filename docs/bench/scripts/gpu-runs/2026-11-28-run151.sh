#!/usr/bin/env bash
# GPU run 151 (2026-11-28, session 29): CUDA's code tables in read-only global memory (e79f735). The
# GPU suite and compute-sanitizer's memcheck on the new tree, then qkgen bench before (905fbef, staged
# in .gpu/base) and after, in one run: dequantize and GEMV of the table rows.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1; rm -f $OUT/setup.log
timeout 280 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/suite.log 2>&1
echo "suite rc $?"; tail -2 $OUT/suite.log; grep -E "^FAILED|^ERROR" $OUT/suite.log | head; date -u +%H:%M:%S
timeout 90 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -k memcheck -p no:cacheprovider > /tmp/san.log 2>&1
echo "memcheck rc $?"; tail -1 /tmp/san.log; date -u +%H:%M:%S
for tree in base new; do
  pp=$PYTHONPATH; [ $tree = base ] && pp=$PWD/.gpu/base:$PYTHONPATH
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 60 python3 -m qkgen bench --backend cuda --op dequantize --shapes 8192x8192 \
    --dtypes bf16 --formats nf4:nested,fp4:nested,blockwise8 --no-compile-times --no-progress --iters 20 \
    --json /tmp/d$tree.json --markdown $OUT/deq_$tree.md > /tmp/d$tree.log 2>&1)
  echo "deq $tree rc $? in $(( $(date +%s) - s )) s"; grep -E "^\| (nf4|fp4|blockwise8)" $OUT/deq_$tree.md | cut -d'|' -f2-9 | head -4
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 90 python3 -m qkgen bench --backend cuda --op gemv --shapes 8192x8192 --m 1,8 \
    --dtypes bf16 --formats nf4:nested,fp4:nested --no-compile-times --no-progress \
    --json /tmp/g$tree.json --markdown $OUT/gemv_$tree.md > /tmp/g$tree.log 2>&1)
  echo "gemv $tree rc $? in $(( $(date +%s) - s )) s"; grep -E "^\| (nf4|fp4)" $OUT/gemv_$tree.md | cut -d'|' -f2-10 | head -6
done
date -u +%H:%M:%S
