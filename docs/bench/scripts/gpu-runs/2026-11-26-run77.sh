#!/usr/bin/env bash
# GPU run 77 (2026-11-26): what-if probe of the mma path's nf4 decode at M = 1 (mma_decode_probe.py:
# the source patched with a near-free decode, and with a 16-entry bf16 table looked up by byte
# permutes), kernel alone, bf16 x, 8192^2 and 4096 x 14336; the float path beside it.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
python3 mma_decode_probe.py $OUT/probe_cases.json
timeout 400 python3 gemv_sweep.py $OUT/probe_cases.json $OUT/probe.json > $OUT/probe.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/probe.log | tail -20
date -u +%H:%M:%S
