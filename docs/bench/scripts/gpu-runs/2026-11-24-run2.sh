#!/usr/bin/env bash
# GPU run 2 (2026-11-24): planes layout (sweep 7p), stage_x (sweep 7s), device quantizer speed, host time per call.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 150 python3 docs/bench/scripts/gemv_sweep.py docs/bench/scripts/sweep7_planes.json $OUT/sweep7p.json > $OUT/sweep7p.log 2>&1
date -u +%H:%M:%S
timeout 230 python3 docs/bench/scripts/gemv_sweep.py docs/bench/scripts/sweep7_stage_x.json $OUT/sweep7s.json > $OUT/sweep7s.log 2>&1
date -u +%H:%M:%S
timeout 110 python3 docs/bench/scripts/quantbench.py $OUT/quant.json > $OUT/quant.log 2>&1
date -u +%H:%M:%S
timeout 60 python3 docs/bench/scripts/hostbench.py new > $OUT/host.log 2>&1
date -u +%H:%M:%S
echo ==== planes; cat $OUT/sweep7p.log; echo ==== stage_x; cat $OUT/sweep7s.log; echo ==== quant; cat $OUT/quant.log; echo ==== host; tail -30 $OUT/host.log
