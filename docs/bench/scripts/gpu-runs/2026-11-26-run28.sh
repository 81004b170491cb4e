#!/usr/bin/env bash
# GPU run 28 (2026-11-26): int8dot for MXFP4/NVFP4 (table codes as signed bytes) and word loads in
# the super-block path (q3_k, q6_k; mxfp4's 1-byte aligned runs as funnel-shifted words): the GPU
# suite, the kernels with and without word loads (sweep 12), public calls on every path (pathbench),
# llama.cpp's MUL_MAT for the same types (its own timer), and a first one-timer comparison (ncu).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 170 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 110 python3 gemv_sweep.py sweep12_subblock.json $OUT/sweep12.json > $OUT/bench.log 2>&1
echo "sweep12 rc $?"; date -u +%H:%M:%S
timeout 90 python3 pathbench.py $OUT/pathbench.json mxfp4,nvfp4,q6_k,q3_k >> $OUT/bench.log 2>&1
echo "pathbench rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
for t in mxfp4 nvfp4 q4_K q6_K q3_K; do for n in 1 8; do
  timeout 30 $TBO perf -o MUL_MAT -b CUDA0 -p "type_a=$t,type_b=f32,m=4096,n=$n,k=14336" 2>&1 | grep -E "MUL_MAT\(" | head -1
done; done | tee $OUT/llamacpp.log; date -u +%H:%M:%S
timeout 80 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:1 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; tail -5 $OUT/sametimer.log; date -u +%H:%M:%S
