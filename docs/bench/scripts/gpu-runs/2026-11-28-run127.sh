#!/usr/bin/env bash
# GPU run 127 (2026-11-28, session 26): compute-sanitizer (memcheck, racecheck, initcheck) over every
# kernel family, round_to_f16 and the mma path's rounded form included.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline | head -1
timeout 500 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -5 $OUT/sanitizer.log; date -u +%H:%M:%S
