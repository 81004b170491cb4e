#!/usr/bin/env bash
# GPU run 140 (2026-11-28, session 27): the GPU suite on the session's final code (0610056).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 250 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/suite.log 2>&1
echo "suite rc $?"; tail -3 $OUT/suite.log; grep -E "^FAILED" $OUT/suite.log | head; date -u +%H:%M:%S
