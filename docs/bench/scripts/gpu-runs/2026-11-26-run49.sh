#!/usr/bin/env bash
# GPU run 49 (2026-11-26): Nsight Compute sections of the shipped kernels, to see what limits them:
# gemv_int8mma for q4_0, q5_0 and q8_0 at M = 8, gemv_int8dot for q8_0 and q4_1 at M = 1 (f32 x,
# 4096 x 14336, public calls; one launch profiled after 20).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
S="--section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats"
for c in "q4_0 8 int8mma gemv_int8mma" "q5_0 8 int8mma gemv_int8mma" "q8_0 8 int8mma gemv_int8mma" "q8_0 1 int8dot gemv_int8dot" "q4_1 1 int8dot gemv_int8dot"; do
  set -- $c
  timeout 100 ncu $S --kernel-name regex:$4 --launch-skip 20 --launch-count 1 python3 ncu_qkgen.py $1 $2 4096 14336 $3 > $OUT/ncu_$1_$2.log 2>&1
  echo "== $c rc $?"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Block Limit|Shared Memory Configuration Size|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" $OUT/ncu_$1_$2.log | sed 's/  */ /g' | head -40
  grep -E "stalled|Stall|spent" $OUT/ncu_$1_$2.log | cut -c1-260 | head -6
done
date -u +%H:%M:%S
