#!/usr/bin/env bash
# GPU run 146 (2026-11-28, session 29): the GPU suite and compute-sanitizer on the tree of session 28's
# end (the int dequantize stepping, blockwise8's mma default, the deferred frees drained at launches,
# OpenCL's unchecked arrays and direct launches), none of which had run the whole suite on a GPU.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1
timeout 330 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/suite.log 2>&1
echo "suite rc $?"; tail -3 $OUT/suite.log; grep -E "^FAILED|^ERROR" $OUT/suite.log | head; date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu tests/gpu/test_sanitizer.py -q -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log; date -u +%H:%M:%S
