#!/usr/bin/env bash
# GPU run 10 (2026-11-25): the restaged device quantizer (status flags, staged GGUF blocks, quantize_blockwise):
# its GPU tests, then the per-kernel profile and the public-call bench.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_quantize_gpu.py -p no:cacheprovider > $OUT/gpu_quantize.log 2>&1
echo "gpu quantize tests rc $?"; tail -3 $OUT/gpu_quantize.log
cd docs/bench/scripts
timeout 200 python3 quantprofile.py $OUT/quantprofile.txt > $OUT/quantprofile.log 2>&1; echo "quantprofile rc $?"
timeout 150 python3 quantbench.py $OUT/quantbench.json > $OUT/quantbench.log 2>&1; echo "quantbench rc $?"
date -u +%H:%M:%S
grep -E "^==|dev " $OUT/quantprofile.txt | grep -v "Activity\|aten::to\b\|_to_copy\|aten::copy_" | head -70
cat $OUT/quantbench.log
