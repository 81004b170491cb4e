#!/usr/bin/env bash
# GPU run 179 (2026-12-02, session 33): sweep 76, gemv_mma by the pair table with rounds (a
# work-group takes several 16-row blocks in turn, its tables filled once) and with launch bounds of
# 3 and 4 work-groups a multiprocessor (a source patch), against the pairs GEMV on short rows.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
(cd docs/bench/scripts && timeout 150 python3 gemv_sweep.py sweep76_mma_rounds.json $OUT/sweep76.json > $OUT/sweep76.log 2>&1)
echo "sweep rc $?"; grep -c cold $OUT/sweep76.log; grep ERROR $OUT/sweep76.log | cut -c1-300; date -u +%H:%M:%S
cat $OUT/sweep76.log | cut -c1-170
