#!/usr/bin/env bash
# GPU run 69 (2026-11-26): NVIDIA's OpenCL with its warps as sub-groups (PTX shfl.sync) and warp
# matrix products (PTX mma.sync) through inline PTX: its GPU tests and qkgen check (every family it
# runs), then qkgen bench on the same op and shapes: CUDA, OpenCL before (old/: the tree of the last
# commit, through PYTHONPATH) and OpenCL after, one run.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m qkgen devices 2>&1 | grep -i nvidia | head -3
timeout 150 python3 -m pytest -m gpu tests/gpu/test_opencl_nvidia.py -q -x -p no:cacheprovider > $OUT/tests.log 2>&1
echo "opencl gpu tests rc $?"; tail -2 $OUT/tests.log; date -u +%H:%M:%S
for f in q4_0 nf4 q4_k q8_1; do
  timeout 120 python3 -m qkgen check -b opencl -d NVIDIA --format $f --no-progress > $OUT/check_$f.log 2>&1
  echo "check $f rc $?: $(tail -1 $OUT/check_$f.log)"; grep FAIL $OUT/check_$f.log | head -3
done
date -u +%H:%M:%S
B="--iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --formats q4_0,q4_1,nf4:nested,q8_0 --dtypes f16 --m 1,8 --cold --no-bnb --host-calls 0"
timeout 120 python3 -m qkgen bench $B --backend cuda --json $OUT/cuda.json > $OUT/bench_cuda.log 2>&1; echo "cuda rc $?"
timeout 120 python3 -m qkgen bench $B --backend opencl --device NVIDIA --json $OUT/opencl.json > $OUT/bench_opencl.log 2>&1; echo "opencl rc $?"
PYTHONPATH=$PWD/old:$PYTHONPATH timeout 120 python3 -m qkgen bench $B --backend opencl --device NVIDIA --json $OUT/opencl_before.json > $OUT/bench_opencl_before.log 2>&1; echo "opencl before rc $?"
date -u +%H:%M:%S
