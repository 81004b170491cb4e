#!/usr/bin/env bash
# GPU run 201 (2026-12-03, session 39): gemv_int8dot at M = 1, kernel alone (sweep 81): the
# work-groups an SM holds (registers capped by __launch_bounds__'s second argument) and team shapes,
# as run 200's Nsight Compute profile of q4_0 showed 2048 work-groups in 1.29 waves (40 registers).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 400 python3 gemv_sweep.py sweep81_int8dot_waves.json $OUT/run201-sweep81.json > $OUT/run201-sweep81.log 2>&1)
echo "sweep81 rc $?"; sed 's/"op": "gemv_int8dot", //; s/"patch": \[\["__launch_bounds__(128)", "__launch_bounds__(128, \([0-9]*\))"\]\]/lb \1/' $OUT/run201-sweep81.log | cut -c1-140
date -u +%H:%M:%S
