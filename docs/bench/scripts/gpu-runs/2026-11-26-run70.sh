#!/usr/bin/env bash
# GPU run 70 (2026-11-26): the session's last tree (x in fragments, the int8mma defaults, NVIDIA's
# OpenCL warps and mma): the whole GPU suite but the sanitizer and decode-time tests (run 67 ran the
# sanitizer; the CUDA dialect gained ptx_helper only since).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 420 python3 -m pytest -m gpu tests/gpu -q -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; tail -4 $OUT/gpu_suite.log; date -u +%H:%M:%S
