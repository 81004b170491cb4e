#!/usr/bin/env bash
# GPU run 105 (2026-11-27, session 24, branch kfrag): the super-block rows' public gemv calls on every
# path (float, int8dot, int8mma: W in fragments on CUDA now), f16 x, M = 1, 2, 3, 4, 8, 4096 x 14336,
# cold and hot, both launches of the integer paths counted; then llama.cpp's test-backend-ops MUL_MAT
# for the same types (m = 4096, k = 14336, n = 1 and 8; it reuses its buffers: compare with "hot").
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --no-bnb --host-calls 0 --backend cuda"
timeout 330 python3 -m qkgen bench $B --formats q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4,nvfp4 --dtypes f16 --m 1,2,3,4,8 \
  --json $OUT/bench_f16.json --markdown $OUT/bench_f16.md > $OUT/bench_f16.log 2>&1; echo "f16 rc $?"
grep -E "^\| [a-z0-9_]+ \|" $OUT/bench_f16.log | awk -F'|' '{print $2,$6,$7,$11,$12,$13}' | sed 's/  */ /g'
date -u +%H:%M:%S
timeout 150 bash -c "while kill -0 $PEERS_PID 2>/dev/null; do sleep 2; done"; tail -2 /tmp/tbo-build.log
for t in q2_K q3_K q4_K q5_K q6_K mxfp4; do for n in 1 8; do
  timeout 30 $TBO perf -o MUL_MAT -b CUDA0 -p "type_a=$t,type_b=f32,m=4096,n=$n,k=14336" 2>&1 | grep -E "MUL_MAT\(" | sed 's/  */ /g'
done; done > $OUT/llamacpp.log; cat $OUT/llamacpp.log
date -u +%H:%M:%S
