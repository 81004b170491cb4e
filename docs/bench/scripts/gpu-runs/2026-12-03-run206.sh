#!/usr/bin/env bash
# GPU run 206 (2026-12-03, session 40): the FP4 rows' quantizer on x's bits, work-group sizes and
# x in registers or read again (kernels alone); Nsight Compute (occupancy, stalls, instructions);
# the 16-bit kernels' SASS.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 200 python3 quantsweep.py qsweep_s40b.json /tmp/qs-new.json > $OUT/run206-qsweep.log 2>&1)
echo "sweep rc $?"; cut -c1-150 $OUT/run206-qsweep.log
date -u +%H:%M:%S
(cd $S && timeout 150 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --section LaunchStats --metrics smsp__inst_executed.sum python3 quantncu.py qncu_s40.json > $OUT/run206-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed.sum|Issue Slots|Achieved Occ|Registers Per|Stall|Warp Cycles Per Issued" $OUT/run206-ncu.txt | cut -c1-120
for dt in f16 bf16; do
  python3 -m qkgen dump quantize mxfp4 -t cuda-sm90 --dtype $dt -o /tmp/sass > /dev/null
  nvcc -cubin -arch=sm_90 -o /tmp/sass/m-$dt.cubin /tmp/sass/quantize_mxfp4_$dt.cu && cuobjdump -sass /tmp/sass/m-$dt.cubin > $OUT/run206-sass-mxfp4-$dt.txt
done
ls -la $OUT; date -u +%H:%M:%S
