#!/usr/bin/env bash
# GPU run 163 (2026-12-01, session 31): Nsight Compute on three M = 1 float GEMV kernels of sweep 60
# (nf4 nested, bf16 x, 8192^2): as is (rpw 4, slices 4), and the byte-pair table at rpw 4 / 8,
# slices 2, wg 256: what holds them at 39-44% of the copy ceiling when hot equals cold.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
PROBE_ONCE=1 timeout 300 ncu --kernel-name regex:gemv_nf4 --launch-count 3 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
  --section InstructionStats --section SchedulerStats python3 gemv_sweep.py sweep61_pair_table_ncu.json /tmp/s61.json \
  > $OUT/ncu_pairs.txt 2>&1
echo "ncu rc $?"
grep -E "gemv_nf4|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Stall [A-Z]|Warp Cycles Per Issued|Executed Ipc A|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Issue Slots|No Eligible|One or More|Waves Per SM|Block Limit" $OUT/ncu_pairs.txt | sed 's/  */ /g' | cut -c1-160
date -u +%H:%M:%S
