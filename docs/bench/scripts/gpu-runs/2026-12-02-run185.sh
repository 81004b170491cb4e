#!/usr/bin/env bash
# GPU run 185 (2026-12-02, session 35): the tree after the int4 defaults (mma pair table at M = 1
# with 16-bit x, run 184) and Target.registers (Intel targets only; CUDA's kernels unchanged). The
# GPU tests of CUDA graphs, out=, the mma path, the device quantizer and bitsandbytes interop (device
# time is short this session: not the whole suite, not compute-sanitizer), then the
# int4 rows' public calls at their new defaults against the other paths.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cuda_graph.py tests/gpu/test_gemv_out.py \
  tests/gpu/test_gemv_mma_gpu.py tests/gpu/test_quantize_gpu.py tests/gpu/test_bnb_gpu.py --durations=5 > $OUT/pytest.log 2>&1
echo "gpu tests rc $?"; tail -4 $OUT/pytest.log | cut -c1-300; date -u +%H:%M:%S
(cd /tmp && timeout 60 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1 --dtypes f16,f32 \
  --formats int4:row --no-bnb --no-compile-times --no-progress --markdown $OUT/run185-int4.md > /tmp/b.log 2>&1)
echo "bench rc $?"; grep -A8 "^## Summary" $OUT/run185-int4.md | tail -n +5 | grep "^|" | cut -c1-230; date -u +%H:%M:%S
