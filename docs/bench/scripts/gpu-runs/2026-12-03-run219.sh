#!/usr/bin/env bash
# GPU run 219 (2026-12-03, session 42): the final tree (the keys' byte offsets; blockwise8 with 16-bit x
# under a register budget on sm_90): the public calls' kernel time (quantprofile.py) and the GPU quantize
# tests with compute-sanitizer.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 100 python3 quantprofile.py $OUT/run219-profile.txt fp4,nf4,blockwise8 f16,bf16,f32 > /dev/null 2>&1)
echo "profile rc $?"; grep -A1 "^==" $OUT/run219-profile.txt | grep -E "^==|dev" | cut -c1-110
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_sanitizer.py --durations=3 > $OUT/run219-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run219-pytest.log | cut -c1-300; date -u +%H:%M:%S
