#!/usr/bin/env bash
# GPU run 200 (2026-12-03, session 39): CUDA and NVIDIA's OpenCL under one timer (--timing span on
# both: events around back-to-back launches) and CUDA's graph timer beside it; OpenCL at M = 1, 2,
# 4, 8 for its defaults; Nsight Compute on the M = 1 kernels of q4_0 (int8dot) and nf4 nested (pairs).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
B="python3 -m qkgen bench --op gemv --shapes 4096x14336 --dtypes f16 --no-bnb --no-compile-times --host-calls 0 --no-progress"
F=q4_0,q4_1,q8_0,q4_k,nf4:nested,int4:row
timeout 120 $B --m 1,8 --backend cuda --timing span --formats $F --markdown $OUT/run200-cuda-span.md > $OUT/run200-cuda-span.log 2>&1; echo "cuda span rc $?"
timeout 120 $B --m 1,8 --backend cuda --formats $F --markdown $OUT/run200-cuda-graph.md > $OUT/run200-cuda-graph.log 2>&1; echo "cuda graph rc $?"
timeout 200 $B --m 1,2,4,8 --backend opencl --device NVIDIA --timing span --formats $F --markdown $OUT/run200-opencl-span.md > $OUT/run200-opencl.log 2>&1; echo "opencl rc $?"
tail -2 $OUT/run200-cuda-span.log | cut -c1-200
M="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats"
M="$M --metrics smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
(cd $S && timeout 90 ncu -k regex:gemv_int8dot --launch-skip 40 --launch-count 1 $M python3 ncu_qkgen.py q4_0 1 4096 14336 "" f32 > $OUT/run200-ncu.txt 2>&1)
echo "ncu q4_0 rc $?"
(cd $S && timeout 90 ncu -k regex:gemv --launch-skip 40 --launch-count 1 $M python3 ncu_qkgen.py nf4 1 4096 14336 "" f16 nested >> $OUT/run200-ncu.txt 2>&1)
echo "ncu nf4 rc $?"
grep -E "^  [a-z_0-9]+|Duration|DRAM Throughput|L1/TEX Hit|Memory Throughput|inst_executed.sum|requests_pipe|sectors_pipe|wavefronts_mem|Achieved Occ|Registers Per|Stall|Issue Slots|Warp Cycles Per Issued" $OUT/run200-ncu.txt | cut -c1-120 | head -60
date -u +%H:%M:%S
