#!/usr/bin/env bash
# GPU run 178 (2026-12-02, session 33): sweep 75, gemv_mma with the byte-pair table after its
# steps became running pointers (no per-step row arithmetic), whole steps without guards and the
# block scales found once a step by one lane each; against the float decode and the pairs GEMV.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 150 python3 gemv_sweep.py sweep75_mma_pair_table.json $OUT/sweep75.json > $OUT/sweep75.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep75.log; grep ERROR $OUT/sweep75.log | cut -c1-300; date -u +%H:%M:%S
cat $OUT/sweep75.log | cut -c1-170
