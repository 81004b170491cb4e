#!/usr/bin/env bash
# GPU run 4 (2026-11-24): OpenCL (PTX dp4a, staged x) against CUDA; nf4/fp4 against bitsandbytes and dense; dequantize vs bnb; sanitizer.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
B="python3 -m qkgen bench --iters 10 --no-compile-times --no-progress"
date -u +%H:%M:%S
timeout 110 $B --backend opencl --device NVIDIA --op gemv --shapes 4096x14336 --formats q4_0,q4_1,nf4:nested,q8_0 --dtypes f16 --m 1,8 --cold --no-bnb --host-calls 0 --markdown $OUT/ocl.md --json $OUT/ocl.json > $OUT/ocl.log 2>&1; echo "ocl rc $?"
timeout 70 $B --backend cuda --op gemv --shapes 4096x14336 --formats q4_0,q4_1,nf4:nested,q8_0 --dtypes f16 --m 1,8 --cold --no-bnb --host-calls 0 --markdown $OUT/cuda.md --json $OUT/cuda.json > $OUT/cuda.log 2>&1; echo "cuda rc $?"
date -u +%H:%M:%S
timeout 110 $B --backend cuda --op gemv --shapes 8192x8192 --formats nf4:nested,fp4:nested --dtypes bf16 --m 1,8 --markdown $OUT/bnb.md --json $OUT/bnb.json > $OUT/bnb.log 2>&1; echo "bnb rc $?"
timeout 50 $B --backend cuda --op dequantize --shapes 8192x8192 --formats blockwise8,nf4:nested,int4:row --dtypes bf16 --cold --host-calls 0 --markdown $OUT/deq.md --json $OUT/deq.json > $OUT/deq.log 2>&1; echo "deq rc $?"
date -u +%H:%M:%S
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_sanitizer.py -k "racecheck or initcheck" -p no:cacheprovider > $OUT/sanitizer.log 2>&1; echo "sanitizer rc $?"; tail -3 $OUT/sanitizer.log
date -u +%H:%M:%S
for f in ocl cuda bnb deq; do echo "== $f"; grep -E "^\| (q|nf|fp|bl|in)" $OUT/$f.md | cut -d'|' -f2,3,4,6,7,10,11,12,13,16; done
