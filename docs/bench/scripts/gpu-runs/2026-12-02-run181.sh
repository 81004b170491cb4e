#!/usr/bin/env bash
# GPU run 181 (2026-12-02, session 33): after run 180's findings (a group scale read past its array in
# the pair table's steps past the row's end; two tiles with the pair table over 48 KB of local memory;
# the catalog's int4 tests checked against the rounded-weight model): the mma GPU tests and memcheck
# over every kernel family again, racecheck over the pair table's calls.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 100 python3 -m pytest -m gpu -q tests/gpu/test_gemv_mma_gpu.py -p no:cacheprovider > $OUT/pytest_mma.log 2>&1
echo "mma tests rc $?"; grep -E "^FAILED" $OUT/pytest_mma.log | head -5; tail -1 $OUT/pytest_mma.log | cut -c1-300; date -u +%H:%M:%S
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
python3 docs/bench/scripts/pair_table_race.py > /dev/null 2>&1
timeout 60 $CS --tool racecheck --error-exitcode 3 python3 docs/bench/scripts/pair_table_race.py > $OUT/racecheck.log 2>&1
echo "racecheck rc $?"; grep -E "PAIR_TABLE_RAN|hazards" $OUT/racecheck.log | tail -2
timeout 170 python3 -m pytest -m gpu -q tests/gpu/test_sanitizer.py -k memcheck -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "memcheck rc $?"; tail -1 $OUT/sanitizer.log | cut -c1-300; grep -m3 -E "Invalid|at gemv|ERROR SUMMARY" $OUT/sanitizer.log; date -u +%H:%M:%S
