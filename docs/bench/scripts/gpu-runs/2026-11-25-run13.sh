#!/usr/bin/env bash
# GPU run 13 (2026-11-25): quantize_blockwise with integer absmax, literal first search steps and packed FP4
# order (sweep 2), the GPU quantizer tests, the public-call bench and host time with the bound warm path.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_quantize_gpu.py -p no:cacheprovider > $OUT/gpu_quantize.log 2>&1
echo "gpu quantize tests rc $?"; tail -2 $OUT/gpu_quantize.log
cd docs/bench/scripts
timeout 200 python3 quantsweep.py qsweep2.json $OUT/qsweep2.json > $OUT/qsweep2.log 2>&1; echo "quantsweep rc $?"
timeout 150 python3 quantbench.py $OUT/quantbench.json > $OUT/quantbench.log 2>&1; echo "quantbench rc $?"
timeout 60 python3 quanthost.py > $OUT/quanthost.txt 2>&1; echo "quanthost rc $?"
date -u +%H:%M:%S
cat $OUT/qsweep2.log; cat $OUT/quantbench.log; head -3 $OUT/quanthost.txt
