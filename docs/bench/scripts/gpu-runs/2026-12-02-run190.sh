#!/usr/bin/env bash
# GPU run 190 (2026-12-02, session 37): fp4's bucket search, kernels alone before (4de8b58, .gpu/base)
# and after, per_lane 16 and 32; the device quantizer's and bitsandbytes' GPU tests and
# compute-sanitizer over every kernel family on the session's last kernel tree.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 100 python3 quantsweep.py qsweep_s37c.json /tmp/qs-$tree.json > $OUT/run190-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-120 $OUT/run190-qsweep-$tree.log
done
date -u +%H:%M:%S
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_bnb_gpu.py \
  tests/gpu/test_sanitizer.py --durations=3 > $OUT/run190-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run190-pytest.log | cut -c1-300; date -u +%H:%M:%S
