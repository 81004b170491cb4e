#!/usr/bin/env bash
# GPU run 214 (2026-12-03, session 42): quantize_blockwise's 4-bit tables (nf4, fp4) by log buckets (knob
# log_buckets) against the linear buckets they take now, kernels alone; SASS of fp4's f16 kernel both ways;
# Nsight Compute on fp4, mxfp4 and nvfp4 with f16 x; the log-bucket corners through CUDA and NVIDIA's OpenCL.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 240 python3 quantsweep.py qsweep_s42.json /tmp/qs.json > $OUT/run214-qsweep.log 2>&1)
echo "sweep rc $?"; cut -c1-150 $OUT/run214-qsweep.log
for v in False True; do
  python3 -m qkgen dump quantize_blockwise fp4 -t cuda-sm90 --dtype f16 --blocksize 64 --param log_buckets=$v -o /tmp/sass-$v > /dev/null
  nvcc -cubin -arch=sm_90 -o /tmp/sass-$v/k.cubin /tmp/sass-$v/quantize_blockwise_fp4_bs64_f16*.cu 2>&1 | tail -2
  cuobjdump -sass /tmp/sass-$v/k.cubin > $OUT/run214-sass-log$v.txt
  echo "log_buckets=$v: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/run214-sass-log$v.txt) SASS instructions"
done
date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 150 python3 - > $OUT/run214-corners.log 2>&1 <<'PY'
import numpy as np
from _pytest.monkeypatch import MonkeyPatch
import test_quantize_device as T
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(11)
for be in ("cuda", "opencl"):
    for name in ("nf4", "fp4"):
        for dt in ("f32", "f16"):
            mp = MonkeyPatch()
            try:
                T.test_blockwise_log_buckets_for_the_nearest_rule(be, name, dt, rng, None, mp)
            finally:
                mp.undo()
    print(be, "log-bucket corners equal the reference")
PY
echo "corners rc $?"; tail -5 $OUT/run214-corners.log
(cd $S && timeout 120 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum \
  python3 quantncu.py qncu_s42.json > $OUT/run214-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed|bank_conflicts|Achieved Occ|Warp Cycles Per Issued|DRAM Through|Compute \(SM\)" $OUT/run214-ncu.txt | cut -c1-120
date -u +%H:%M:%S
