#!/usr/bin/env bash
# GPU run 65 (2026-11-26): Nsight Compute on nf4 nested at M = 1, bf16 x (the bitsandbytes
# comparison's case): the float path's gemv at 8192 x 8192 and 4096 x 14336, and the mma path, to
# see what bounds them (31% of copy on the H200, 2026-11-25).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
S="--section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats --section SchedulerStats"
M="--metrics l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__inst_executed.sum,smsp__inst_executed_op_shared_ld.sum"
for c in "8192 8192 float gemv_" "4096 14336 float gemv_" "8192 8192 mma gemv_mma"; do
  set -- $c
  timeout 100 ncu $S $M --kernel-name regex:$4 --launch-skip 20 --launch-count 1 python3 ncu_qkgen.py nf4 1 $1 $2 $3 bf16 nested > $OUT/ncu_$1_$3.log 2>&1
  echo "== $c rc $?"
  grep -E "  Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  |L1/TEX Hit|Mem Busy|Grid Size|Block Size|l1tex__|dram__|sm__inst|smsp__inst" $OUT/ncu_$1_$3.log | sed 's/  */ /g' | head -26
  grep -E "stalled|Stall|spent|excessive|bound" $OUT/ncu_$1_$3.log | cut -c1-220 | head -6
  grep -E "^  *gemv|Kernel Name|  [a-z_0-9]+\(" $OUT/ncu_$1_$3.log | head -2
done
date -u +%H:%M:%S
