#!/usr/bin/env bash
# GPU run 130 (2026-11-28, session 26): a what-if probe (pdl_probe.py): programmatic dependent launch
# for the two-launch paths (x to q8_1 or f16, then the product), graph-timed, cold and hot.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 300 python3 pdl_probe.py $OUT/pdl.json q4_0:1:f32,q4_0:1:f16,q5_1:1:f32,q8_0:1:f32,q4_k:1:f32,q4_0:8:f32,nf4:8:f32,int4:8:f32 > $OUT/pdl.log 2>&1
echo "probe rc $?"; cut -c1-160 $OUT/pdl.log; date -u +%H:%M:%S
