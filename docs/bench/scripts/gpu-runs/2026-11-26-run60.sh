#!/usr/bin/env bash
# GPU run 60 (2026-11-26): run 59's "before" half again (PYTHONPATH now keeps setup.sh's site
# packages), then Nsight Compute on the new gemv_int8frag (q4_0, q8_0, M = 8, f32 x) as in run 58.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
F=q4_0,q4_1,q5_0,q5_1,q8_0
PYTHONPATH=$OLDPWD/old:$PYTHONPATH timeout 170 python3 fragbench.py $OUT/before.json $F 4,8 > $OUT/before.log 2>&1; echo "before rc $?"
timeout 170 python3 fragbench.py $OUT/after.json $F 4,8 > $OUT/after.log 2>&1; echo "after rc $?"
paste -d'|' <(cut -c1-80 $OUT/before.log) <(cut -c1-80 $OUT/after.log)
S="--section SpeedOfLight --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis --section SourceCounters"
M="--metrics lts__t_sectors_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,dram__bytes_read.sum,l1tex__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum"
for c in "q4_0 8 int8mma gemv_int8frag" "q8_0 8 int8mma gemv_int8frag"; do
  set -- $c
  timeout 100 ncu $S $M --kernel-name regex:$4 --launch-skip 20 --launch-count 1 python3 ncu_qkgen.py $1 $2 4096 14336 $3 > $OUT/ncu_$1_$2.log 2>&1
  echo "== $c rc $?"
  grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|No Eligible|Warp Cycles Per Issued|lts__|l1tex__|dram__|sm__inst" $OUT/ncu_$1_$2.log | sed 's/  */ /g' | head -20
  grep -E "stalled|excessive" $OUT/ncu_$1_$2.log | cut -c1-200 | head -4
done
date -u +%H:%M:%S
