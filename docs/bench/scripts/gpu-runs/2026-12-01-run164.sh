#!/usr/bin/env bash
# GPU run 164 (2026-12-01, session 31): sweep 62 (what-if): the byte-pair table of sweep 60 with the
# next chunk's loads issued before this one's decode (prefetch), across rows a lane group, slices and wg.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 420 python3 gemv_sweep.py sweep62_pair_table_prefetch.json $OUT/sweep62.json > $OUT/sweep62.log 2>&1
echo "sweep rc $?"; grep -c cold $OUT/sweep62.log; grep ERROR $OUT/sweep62.log | cut -c1-300; date -u +%H:%M:%S
