#!/usr/bin/env bash
# GPU run 159 (2026-11-28, session 30): the float GEMV decoded and multiplied 8 elements at a time
# (templates/gemv.jinja, the tree of this session) against the tree before (HEAD 9448151, staged in
# .gpu/base), kernel alone, at the op's defaults (sweep 58: M = 1 and M = 4-8 rows); then the new tree's
# rows-a-lane-group and slices knobs at M = 1 (sweep 59).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
PYTHONPATH=$OLDPWD/.gpu/base:${PYTHONPATH:-} python3 -c "import qkgen; print('before:', qkgen.__file__)"
PYTHONPATH=$OLDPWD/.gpu/base:${PYTHONPATH:-} timeout 200 python3 gemv_sweep.py sweep58_groups_defaults.json $OUT/sweep58_before.json > $OUT/sweep58_before.log 2>&1
echo "before rc $?"; date -u +%H:%M:%S
python3 -c "import qkgen; print('after:', qkgen.__file__)"
timeout 200 python3 gemv_sweep.py sweep58_groups_defaults.json $OUT/sweep58_after.json > $OUT/sweep58_after.log 2>&1
echo "after rc $?"; date -u +%H:%M:%S
timeout 180 python3 gemv_sweep.py sweep59_groups_knobs.json $OUT/sweep59.json > $OUT/sweep59.log 2>&1
echo "knobs rc $?"; grep -h ERROR $OUT/sweep58_*.log $OUT/sweep59.log | cut -c1-300; date -u +%H:%M:%S
