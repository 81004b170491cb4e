#!/usr/bin/env bash
# GPU run 44 (2026-11-26): public calls on every path (pathbench.py, graph-timed, cold and hot) for
# q4_0, q4_1, q5_1 at M = 4..8 with f16 and f32 x, to choose from which M the int8mma path is the default.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for dt in f16 f32; do
  timeout 250 python3 pathbench.py $OUT/paths_$dt.json q4_0,q4_1,q5_1 4096x14336 $dt 4,5,6,7,8 > $OUT/paths_$dt.log 2>&1
  echo "pathbench $dt rc $?"; cut -c1-150 $OUT/paths_$dt.log; date -u +%H:%M:%S
done
