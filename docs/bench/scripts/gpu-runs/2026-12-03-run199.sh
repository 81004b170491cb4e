#!/usr/bin/env bash
# GPU run 199 (2026-12-03, session 39): what a read-only kernel reaches at the GEMVs' weight sizes
# (readceiling.py); NVIDIA's OpenCL against CUDA on the current defaults, both timed by events around
# back-to-back launches (span); q4_k / q5_k at M = 2, 3 on int8dot against int8mma (fragbench.py).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 150 python3 readceiling.py $OUT/run199-readceiling.json > $OUT/run199-readceiling.log 2>&1)
echo "readceiling rc $?"; grep -E "ceiling|torch copy|^best" $OUT/run199-readceiling.log
B="python3 -m qkgen bench --op gemv --shapes 4096x14336 --m 1,8 --dtypes f16 --no-bnb --no-compile-times --host-calls 0 --no-progress --timing span"
F=q4_0,q4_1,q8_0,q4_k,q6_k,nf4:nested,int4:row
timeout 100 $B --backend cuda --formats $F --markdown $OUT/run199-cuda-span.md > $OUT/run199-cuda.log 2>&1; echo "cuda rc $?"
timeout 170 $B --backend opencl --device NVIDIA --formats $F --markdown $OUT/run199-opencl-span.md > $OUT/run199-opencl.log 2>&1; echo "opencl rc $?"
tail -3 $OUT/run199-opencl.log | cut -c1-200
(cd $S && timeout 90 python3 fragbench.py /tmp/fb.json q4_k,q5_k 2,3 4096x14336 2,3 fragments > $OUT/run199-fragbench.log 2>&1)
echo "fragbench rc $?"; cut -c1-110 $OUT/run199-fragbench.log | tail -12; date -u +%H:%M:%S
