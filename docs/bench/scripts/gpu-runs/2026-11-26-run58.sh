#!/usr/bin/env bash
# GPU run 58 (2026-11-26): Nsight Compute on gemv_int8frag (the int8mma path, W in fragments) and
# gemv_int8mma (blocks) at M = 8, f32 x, 4096 x 14336, public calls: where do the loads go (L1 / L2
# sectors of W and of x's q8_1 words), and what bounds the kernel.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
S="--section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section InstructionStats --section SourceCounters"
M="--metrics lts__t_sectors_op_read.sum,lts__t_bytes.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum"
for c in "q4_0 8 int8mma gemv_int8frag" "q8_0 8 int8mma gemv_int8frag" "q4_1 8 int8mma gemv_int8mma" "q4_1 1 int8dot gemv_int8dot"; do
  set -- $c
  timeout 120 ncu $S $M --kernel-name regex:$4 --launch-skip 20 --launch-count 1 python3 ncu_qkgen.py $1 $2 4096 14336 $3 > $OUT/ncu_$1_$2.log 2>&1
  echo "== $c rc $?"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  |L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|lts__|l1tex__|dram__|sm__inst|Grid Size|Block Size|Waves" $OUT/ncu_$1_$2.log | sed 's/  */ /g' | head -40
  grep -E "stalled|Stall|spent|uncoalesced|sectors" $OUT/ncu_$1_$2.log | cut -c1-300 | head -8
done
date -u +%H:%M:%S
