#!/usr/bin/env bash
# GPU run 86 (2026-11-26, session 18): word runs through 16-byte aligned vectors (sweep 40, the
# probe_loads.py what-if: 2-byte aligned W runs, 4-byte aligned x runs, both) against word loads,
# int8dot kernel alone at M = 1 (and M = 8 for q3_k / q6_k), 4096 x 14336, f16 x; and Nsight
# Compute's L1 and stall figures for q6_k and q8_0 at M = 1 on the defaults.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 330 python3 gemv_sweep.py sweep40_vector_loads.json $OUT/sweep40.json > $OUT/sweep40.log 2>&1; echo "sweep rc $?"
cut -c1-150 $OUT/sweep40.log
S="--section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis"
M="--metrics l1tex__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio"
for f in q6_k q8_0; do
  timeout 100 ncu $S $M --kernel-name regex:gemv_int8dot --launch-skip 20 --launch-count 1 python3 ncu_qkgen.py $f 1 4096 14336 int8dot f16 > $OUT/ncu_$f.log 2>&1
  echo "== $f rc $?"
  grep -E "  Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Mem Busy|Max Bandwidth|Mem Pipes|L1/TEX Hit|Warp Cycles Per Issued|l1tex__|smsp__average" $OUT/ncu_$f.log | sed 's/  */ /g' | head -20
done
date -u +%H:%M:%S
