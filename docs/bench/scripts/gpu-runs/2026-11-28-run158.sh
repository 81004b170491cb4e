#!/usr/bin/env bash
# GPU run 158 (2026-11-28, session 30): sweep 57 (what-if): the word-by-word float GEMV of sweep 56 with
# 4 and 8 rows a lane group, teams of 4 lane groups on the same rows (slices 4) and larger work-groups,
# so that the 4096-row shapes keep enough warps.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep57_word_by_word_teams.json $OUT/sweep57.json > $OUT/sweep57.log 2>&1
echo "sweep rc $?"; grep -c cold $OUT/sweep57.log; grep ERROR $OUT/sweep57.log | cut -c1-300; date -u +%H:%M:%S
