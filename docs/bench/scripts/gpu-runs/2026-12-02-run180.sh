#!/usr/bin/env bash
# GPU run 180 (2026-12-02, session 33): the tree with gemv_mma's byte-pair table as CUDA's mma path for
# nf4 / fp4 / int4: the mma GPU tests (the pair table's among them), racecheck and initcheck over its
# calls, memcheck over every kernel family; then qkgen bench on public calls, the tree before
# (4ce0458, staged in .gpu/base) and after, M = 1 and 8.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 120 python3 -m pytest -m gpu -q tests/gpu/test_gemv_mma_gpu.py -p no:cacheprovider > $OUT/pytest_mma.log 2>&1
echo "mma tests rc $?"; tail -3 $OUT/pytest_mma.log | cut -c1-300; date -u +%H:%M:%S
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
python3 docs/bench/scripts/pair_table_race.py > /dev/null 2>&1  # the kernels built once, outside the tools
for tool in racecheck initcheck; do
  timeout 100 $CS --tool $tool --error-exitcode 3 python3 docs/bench/scripts/pair_table_race.py > $OUT/$tool.log 2>&1
  echo "$tool rc $?"; grep -E "PAIR_TABLE_RAN|ERROR SUMMARY|hazards" $OUT/$tool.log | tail -2
done
timeout 170 python3 -m pytest -m gpu -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -2 $OUT/sanitizer.log | cut -c1-300; date -u +%H:%M:%S
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  for spec in "4096x14336 f16 nf4:nested,fp4:nested,nf4:plain,int4:row" "8192x8192 bf16 nf4:nested,int4:row"; do
    set -- $spec; s=$(date +%s)
    (cd /tmp && PYTHONPATH=$pp timeout 100 python3 -m qkgen bench --backend cuda --op gemv --shapes $1 --m 1,8 \
      --dtypes $2 --formats $3 --no-compile-times --no-progress \
      --json /tmp/g-$1-$tree.json --markdown $OUT/run180-gemv-$1-$2-$tree.md > /tmp/g-$1-$tree.log 2>&1)
    echo "$1 $2 $tree rc $? in $(( $(date +%s) - s )) s"; grep -A10 "^## Summary" $OUT/run180-gemv-$1-$2-$tree.md | cut -c1-250
  done
done
date -u +%H:%M:%S
