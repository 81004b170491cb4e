#!/usr/bin/env bash
# GPU run 14 (2026-11-25): integer grid thresholds for the lookup rule (sweep 3), nested offsets from exact_sum,
# the strided-free codes stage; GPU quantizer tests, per-kernel profile (CUPTI) and public calls.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_quantize_gpu.py -p no:cacheprovider > $OUT/gpu_quantize.log 2>&1
echo "gpu quantize tests rc $?"; tail -2 $OUT/gpu_quantize.log
cd docs/bench/scripts
timeout 150 python3 quantsweep.py qsweep3.json $OUT/qsweep3.json > $OUT/qsweep3.log 2>&1; echo "quantsweep rc $?"
timeout 200 python3 quantprofile.py $OUT/quantprofile.txt > $OUT/quantprofile.log 2>&1; echo "quantprofile rc $?"
timeout 150 python3 quantbench.py $OUT/quantbench.json > $OUT/quantbench.log 2>&1; echo "quantbench rc $?"
date -u +%H:%M:%S
cat $OUT/qsweep3.log; cat $OUT/quantbench.log
grep -E "^==|dev .*quantize|dev .*exact|Memcpy" $OUT/quantprofile.txt | head -80
