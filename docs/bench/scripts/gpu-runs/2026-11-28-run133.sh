#!/usr/bin/env bash
# GPU run 133 (2026-11-28, session 27, an H200): where a warm two-launch call's host time goes
# (launchparts.py, tree of 81a3184).
source .gpu/setup.sh > $OUT/setup.log 2>&1; cd docs/bench/scripts && python3 launchparts.py $OUT/lp.json 2>&1 | grep -v Warn | tee $OUT/lp.log
