#!/usr/bin/env bash
# GPU run 143 (2026-11-28, session 28): run 142's dequantize bench again (its report did not come
# back), then Nsight Compute on the M = 1 kernels of 8192 x 8192, bf16 x: nf4 nested on the float
# and mma paths against q4_0 on the int8dot path (what keeps nf4 at a third of the copy ceiling).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
s=$(date +%s)
timeout 150 python3 -m qkgen bench --backend cuda --op dequantize --shapes 8192x8192 --dtypes bf16 --no-compile-times \
  --no-progress --json /tmp/C.json --markdown $OUT/C.md > /tmp/C.log 2>&1
echo "C rc $? in $(( $(date +%s) - s )) s"; rm -f $OUT/setup.log
cd docs/bench/scripts
for c in 'nf4 float nested gemv_nf4' 'nf4 mma nested gemv_mma' 'q4_0 int8dot plain gemv_int8dot'; do
  set -- $c
  timeout 90 ncu --kernel-name regex:$4 --launch-skip 20 --launch-count 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    --section InstructionStats python3 ncu_qkgen.py $1 1 8192 8192 $2 bf16 $3 > $OUT/ncu_$1_$2.txt 2>&1
  echo "$1 $2 ncu rc $?"
  grep -E "^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Stall [A-Z]|Warp Cycles Per Issued|Executed Ipc A|Executed Instructions  |L1/TEX Hit|Mem Busy|Max Bandwidth" $OUT/ncu_$1_$2.txt | sed 's/  */ /g' | head -30
done
date -u +%H:%M:%S
