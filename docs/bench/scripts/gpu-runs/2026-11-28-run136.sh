#!/usr/bin/env bash
# GPU run 136 (2026-11-28, session 27): host time with and without scratch reuse in one process,
# taking turns (hostab.py), then the GPU suite on the session's final tree.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
(cd docs/bench/scripts && timeout 150 python3 hostab.py $OUT/hostab.json 2>&1 | grep -v Warn | tee $OUT/hostab.log)
date -u +%H:%M:%S
timeout 330 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/suite.log 2>&1
echo "suite rc $?"; tail -3 $OUT/suite.log; date -u +%H:%M:%S
