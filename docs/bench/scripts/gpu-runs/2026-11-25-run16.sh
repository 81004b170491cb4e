#!/usr/bin/env bash
# GPU run 16 (2026-11-25): the final device quantizer tables (kernels alone, per-call kernels, public calls)
# and host time per gemv call (the Bound changes).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
cd docs/bench/scripts
timeout 200 python3 quantsweep.py qsweep_final.json $OUT/qsweep_final.json > $OUT/qsweep_final.log 2>&1; echo "quantsweep rc $?"
timeout 150 python3 quantprofile.py $OUT/quantprofile.txt > $OUT/quantprofile.log 2>&1; echo "quantprofile rc $?"
timeout 120 python3 quantbench.py $OUT/quantbench.json > $OUT/quantbench.log 2>&1; echo "quantbench rc $?"
timeout 100 python3 hostbench.py new > $OUT/hostbench.log 2>&1; echo "hostbench rc $?"
date -u +%H:%M:%S
cat $OUT/qsweep_final.log $OUT/quantbench.log $OUT/hostbench.log
grep -E "^==|dev .*quantize|dev .*exact" $OUT/quantprofile.txt | head -60
