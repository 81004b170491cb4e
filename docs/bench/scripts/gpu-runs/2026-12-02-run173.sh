#!/usr/bin/env bash
# GPU run 173 (2026-12-02, session 32): sweep 70 (dequantize's knobs with f32 outputs, and ept 16 /
# cpi 8 with the prefetch), then public calls: qkgen bench --op dequantize on the tree before
# (6421587, staged in .gpu/base) and after the prefetch knob, bitsandbytes beside.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 150 python3 gemv_sweep.py sweep70_dequant_knobs.json $OUT/sweep70.json > $OUT/sweep70.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep70.log; grep ERROR $OUT/sweep70.log | cut -c1-300; date -u +%H:%M:%S
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 170 python3 -m qkgen bench --backend cuda --op dequantize --shapes 8192x8192,4096x14336 \
    --dtypes bf16 --formats nf4:nested,fp4:nested,nf4:plain,blockwise8 --no-compile-times --no-progress \
    --json $OUT/run173-dequantize-$tree.json --markdown $OUT/run173-dequantize-bf16-$tree.md > /tmp/d-$tree.log 2>&1)
  echo "$tree rc $? in $(( $(date +%s) - s )) s"; tail -3 /tmp/d-$tree.log | cut -c1-200; grep -A12 "^## Summary" $OUT/run173-dequantize-bf16-$tree.md | cut -c1-220
done
date -u +%H:%M:%S
