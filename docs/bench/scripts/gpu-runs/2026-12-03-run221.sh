#!/usr/bin/env bash
# GPU run 221 (2026-12-03, session 43): what one launch costs on NVIDIA's OpenCL apart from the kernel's
# work (ocllaunch.py: empty kernels' profiling events, and the gap between two launches).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
cd docs/bench/scripts && timeout 120 python3 ocllaunch.py NVIDIA 2>&1 | tee $OUT/run221-ocllaunch.log
