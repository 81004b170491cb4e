#!/usr/bin/env bash
# GPU run 24 (2026-11-25): word loads in the int8dot/mma kernels and the mma defaults: the GPU suite,
# compute-sanitizer, then public calls on every path (pathbench.py, GGUF and nf4), nf4 nested against
# bitsandbytes and dense (mmabench.py), and llama.cpp's MUL_MAT (built in the background meanwhile).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh > $OUT/peers.log 2>&1
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider > $OUT/gpu_suite.log 2>&1
echo "gpu suite rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/gpu_suite.log | tail -8; date -u +%H:%M:%S
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -p no:cacheprovider > $OUT/sanitizer.log 2>&1
echo "sanitizer rc $?"; tail -2 $OUT/sanitizer.log; date -u +%H:%M:%S
cd docs/bench/scripts
timeout 100 python3 pathbench.py $OUT/pathbench.json q4_0,q4_1,q5_0,q5_1,q8_0,nf4 > $OUT/pathbench.log 2>&1
echo "pathbench rc $?"; cat $OUT/pathbench.log; date -u +%H:%M:%S
timeout 60 python3 mmabench.py $OUT/mmabench.json 8192x8192 > $OUT/mmabench.log 2>&1
echo "mmabench rc $?"; cat $OUT/mmabench.log; date -u +%H:%M:%S
cd - > /dev/null
wait $PEERS_PID; echo "peers rc $?"
for t in q4_0 q4_1 q5_0 q5_1 q8_0; do for n in 1 8; do
  timeout 30 $TBO perf -o MUL_MAT -b CUDA0 -p "type_a=$t,type_b=f32,m=4096,n=$n,k=14336" 2>&1 | grep -E "MUL_MAT\(" | head -1
done; done | tee $OUT/llamacpp.log; date -u +%H:%M:%S
