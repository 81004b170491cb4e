#!/usr/bin/env bash
# GPU run 192 (2026-12-02, session 37): the review's fixes (the bucket search's FLT_MAX pad, qkx2's
# guard at |v| < 2^21 both ends): the kernels alone once more, and the device quantizer's GPU tests.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 60 python3 quantsweep.py qsweep_s37d.json /tmp/qs.json > $OUT/run192-qsweep-new.log 2>&1)
echo "sweep rc $?"; cut -c1-120 $OUT/run192-qsweep-new.log
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py > $OUT/run192-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run192-pytest.log | cut -c1-300; date -u +%H:%M:%S
