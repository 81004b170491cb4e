#!/usr/bin/env bash
# GPU run 204 (2026-12-03, session 39): NVIDIA's OpenCL timed by per-launch events (each launch's own
# start and end, no enqueue gaps) beside its spans, to tell its kernels' time from its enqueue cost.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
B="python3 -m qkgen bench --op gemv --shapes 4096x14336 --dtypes f16 --no-bnb --no-compile-times --host-calls 0 --no-progress --backend opencl --device NVIDIA"
timeout 120 $B --m 1,8 --timing events --formats q4_0,q8_0,nf4:nested,int4:row --markdown $OUT/run204-opencl-events.md > $OUT/run204-opencl.log 2>&1
echo "opencl events rc $?"
grep "^| " $OUT/run204-opencl-events.md | awk -F'|' '$7 ~ /qkgen/ {print $2, "M="$6, $7, "hot", $11, "cold", $12}' | head -40
date -u +%H:%M:%S
