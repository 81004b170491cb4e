#!/usr/bin/env bash
# GPU run 121 (2026-11-27, session 25): qkgen against llama.cpp on an H100, on the final tree: public
# qkgen.gemv calls on the default paths (pathbench.py, f32 x as llama.cpp's test, M = 1 and 8; compare
# its "hot" column: llama.cpp reuses its buffers), then test-backend-ops MUL_MAT (m = 4096, k = 14336,
# n = 1 and 8) for the same types, built by .gpu/peers.sh on this machine. Two timers: graph replay
# for qkgen, llama.cpp's own for it.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 200 python3 pathbench.py $OUT/paths_f32.json q4_0,q4_1,q5_0,q5_1,q8_0,q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4 4096x14336 f32 1,8 none > $OUT/paths_f32.log 2>&1
echo "paths rc $?"; cut -c1-110 $OUT/paths_f32.log
date -u +%H:%M:%S
timeout 250 bash -c "while kill -0 $PEERS_PID 2>/dev/null; do sleep 2; done"; tail -2 /tmp/tbo-build.log
for t in q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K mxfp4; do for n in 1 8; do
  timeout 30 $TBO perf -o MUL_MAT -b CUDA0 -p "type_a=$t,type_b=f32,m=4096,n=$n,k=14336" 2>&1 | grep -E "MUL_MAT\(" | sed 's/  */ /g'
done; done > $OUT/llamacpp.log; sed "s/,bs=.*src_overlap=0)/)/" $OUT/llamacpp.log
date -u +%H:%M:%S
