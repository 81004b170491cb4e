#!/usr/bin/env bash
# GPU run 191 (2026-12-02, session 37): the public qkgen.quantize calls of nf4 / fp4 at the session's
# last defaults (fp4's bucket search; per_lane 32 for nf4 and fp4 with 16-bit x), device time a
# call, and the device quantizer's GPU tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 120 python3 quantprofile.py $OUT/run191-calls-new.txt nf4,fp4 f16,bf16,f32 > /dev/null 2>&1)
echo "calls rc $?"; grep -E "^==|dev .*quantize" $OUT/run191-calls-new.txt | cut -c1-120
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py > $OUT/run191-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run191-pytest.log | cut -c1-300; date -u +%H:%M:%S
