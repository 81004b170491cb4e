#!/usr/bin/env bash
# GPU run 74 (2026-11-26): what bounds q4_k and q6_k at M = 1 (the format issue's 85% of copy): the
# int8dot kernel alone over its knobs (sweep 35), and Nsight Compute on both at 4096 x 14336, f16 x.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 250 python3 gemv_sweep.py sweep35_kquant_m1.json $OUT/sweep35.json > $OUT/sweep35.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep35.log | tail -24
S="--section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats --section SchedulerStats"
M="--metrics l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,sm__inst_executed.sum,smsp__inst_executed_op_global_ld.sum"
for f in q6_k q4_k; do
  timeout 100 ncu $S $M --kernel-name regex:gemv_int8dot --launch-skip 20 --launch-count 1 python3 ncu_qkgen.py $f 1 4096 14336 int8dot f16 > $OUT/ncu_$f.log 2>&1
  echo "== $f rc $?"
  grep -E "  Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  |L1/TEX Hit|Mem Busy|Grid Size|Block Size|l1tex__|dram__|sm__inst|smsp__inst" $OUT/ncu_$f.log | sed 's/  */ /g' | head -26
  grep -E "stalled|Stall|spent|excessive|bound" $OUT/ncu_$f.log | cut -c1-220 | head -6
done
date -u +%H:%M:%S
