#!/usr/bin/env bash
# GPU run 110 (2026-11-27, session 24): the super-block rows on NVIDIA's OpenCL, public calls on every
# path, f16 x, M = 1, 4, 8, 4096 x 14336, cold and hot: first as the tree stands (the int8mma path
# reads W's blocks there), then with runtime.paths.INT8MMA_FRAGMENTS["opencl-nvidia"] taking the
# super-block rows too (sed on the machine's copy of the tree), so the int8mma row reads fragments.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --no-bnb --host-calls 0 --backend opencl --device NVIDIA"
F="--formats q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4,nvfp4 --dtypes f16 --m 1,4,8"
show() { grep -E "^\| [a-z0-9_]+ \|" $1 | awk -F'|' '{print $2,$6,$7,$11,$12,$13}' | sed 's/  */ /g' | grep -v " torch "; }
timeout 250 python3 -m qkgen bench $B $F --json $OUT/ocl_blocks.json --markdown $OUT/ocl_blocks.md > $OUT/ocl_blocks.log 2>&1
echo "blocks rc $?"; show $OUT/ocl_blocks.log; date -u +%H:%M:%S
sed -i 's/    "opencl-nvidia": frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}),/    "opencl-nvidia": frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", *_K_AND_FP4}),/' codegen/runtime/paths.py
grep -c '"opencl-nvidia": frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", \*_K_AND_FP4})' codegen/runtime/paths.py
timeout 250 python3 -m qkgen bench $B $F --json $OUT/ocl_frag.json --markdown $OUT/ocl_frag.md > $OUT/ocl_frag.log 2>&1
echo "fragments rc $?"; show $OUT/ocl_frag.log | grep int8mma; date -u +%H:%M:%S
