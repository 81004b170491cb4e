#!/usr/bin/env bash
# GPU run 11 (2026-11-25): where a device quantize call's host time goes (cProfile).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
cd docs/bench/scripts
timeout 120 python3 quanthost.py > $OUT/quanthost.txt 2>&1; echo "quanthost rc $?"
head -3 $OUT/quanthost.txt; grep -A32 "Ordered by: internal" $OUT/quanthost.txt | head -36
