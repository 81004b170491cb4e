#!/usr/bin/env bash
# GPU run 189 (2026-12-02, session 37): the public qkgen.quantize calls at the new CUDA defaults
# (per_lane 32 for nf4 f16 / bf16 and fp4 f16), before (4de8b58, .gpu/base) and after; the device
# quantizer's and bitsandbytes' GPU tests on this tree.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 120 python3 quantprofile.py $OUT/run189-calls-$tree.txt nf4,fp4 f16,bf16 > /dev/null 2>&1)
  echo "calls $tree rc $?"; grep -E "^==|dev .*quantize" $OUT/run189-calls-$tree.txt | cut -c1-120
done
date -u +%H:%M:%S
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_bnb_gpu.py > $OUT/run189-pytest.log 2>&1
echo "gpu tests rc $?"; tail -3 $OUT/run189-pytest.log | cut -c1-300; date -u +%H:%M:%S
