#!/usr/bin/env bash
# GPU run 30 (2026-11-26): gemv_mma with f32 x (rounded to f16 on load): its GPU tests, then public
# calls on every path with f32 x (pathbench) to set the f32 defaults, the device quantizers
# (quantbench, with the working tree's mxfp4/nvfp4 quantizer), and qkgen against llama.cpp at n = 1
# under one timer (sametimer.py, ncu).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_gemv_mma_gpu.py tests/gpu/test_quantize_gpu.py -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu mma + quantize tests rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 120 python3 pathbench.py $OUT/pathbench.json q4_0,q4_1,q5_0,q5_1,q8_0,nf4,int4,q2_k,q3_k,q5_k,mxfp4,nvfp4 4096x14336 f32 > $OUT/bench.log 2>&1
echo "pathbench rc $?"; date -u +%H:%M:%S
timeout 60 python3 quantbench.py $OUT/quantbench.json >> $OUT/bench.log 2>&1
echo "quantbench rc $?"; cat $OUT/bench.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers rc $?"
timeout 200 python3 sametimer.py $OUT/sametimer.json $TBO q4_0:1,q4_1:1,q5_0:1,q5_1:1,q8_0:1,q2_K:1,q3_K:1,q4_K:1,q5_K:1,q6_K:1,mxfp4:1,nvfp4:1 > $OUT/sametimer.log 2>&1
echo "sametimer rc $?"; cut -c1-330 $OUT/sametimer.log; date -u +%H:%M:%S
