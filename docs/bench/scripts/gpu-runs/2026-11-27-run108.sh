#!/usr/bin/env bash
# GPU run 108 (2026-11-27, session 24): why gemv_int8frag_sub takes ~42 us at every M for nvfp4 and
# ~24 for mxfp4 (run 103): Nsight Compute on each at M = 8, f16 x, 4096 x 14336 (public calls through
# docs/bench/scripts/ncu_qkgen.py; the 11th launch of the kernel), speed of light, warp stalls,
# occupancy, and the source-level counters of the hottest instructions.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
for f in nvfp4 mxfp4; do
  timeout 200 ncu --kernel-name regex:gemv_int8frag_sub --launch-skip 10 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    python3 docs/bench/scripts/ncu_qkgen.py $f 8 4096 14336 int8mma f16 > $OUT/ncu_$f.txt 2>&1; echo "$f ncu rc $?"
  grep -E "Duration|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall|Warp Cycles Per Issued|Local|Block Limit" $OUT/ncu_$f.txt | sed 's/  */ /g' | head -30
done
date -u +%H:%M:%S
