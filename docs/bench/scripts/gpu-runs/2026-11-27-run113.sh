#!/usr/bin/env bash
# GPU run 113 (2026-11-27, session 25): the device quantizer's kernels alone on this tree, every row
# (sweep qsweep_s25_baseline.json, x [4096, 14336], graph-timed, copy ceiling in the same run), then
# Nsight Compute on the rows below 70% of copy: what limits each (speed of light, stalls, occupancy).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 240 python3 quantsweep.py qsweep_s25_baseline.json $OUT/qsweep.json > $OUT/qsweep.log 2>&1; echo "sweep rc $?"
cat $OUT/qsweep.log
for c in 'mxfp4 f16 quantize' 'blockwise8 f16 quantize_blockwise' 'nf4 f16 quantize_blockwise' 'nvfp4 f16 quantize'; do
  set -- $c
  opts='{}'; [ $1 = nf4 ] && opts='{"blocksize": 64}'
  echo "[[\"$1\", $opts, \"$2\", \"$3\", {}]]" > /tmp/one.json
  timeout 100 ncu --kernel-name regex:quantize --launch-skip 2 --launch-count 1 --section SpeedOfLight \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    python3 quantsweep.py /tmp/one.json /tmp/one_out.json > $OUT/ncu_$1.txt 2>&1; echo "$1 ncu rc $?"
  grep -E "Kernel Name|quantize_|Duration|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Stall [A-Z]|Warp Cycles Per Issued" $OUT/ncu_$1.txt | sed 's/  */ /g' | head -24
done
date -u +%H:%M:%S
