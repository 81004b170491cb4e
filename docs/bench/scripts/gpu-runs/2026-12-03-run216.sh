#!/usr/bin/env bash
# GPU run 216 (2026-12-03, session 42): quantize_blockwise with 16-bit x kept two a word until scaled (knob
# x_words), with fp4's 256 buckets a unit or its log buckets, 16 or 32 elements a work-item, tiles; nf4 and
# blockwise8 alike; kernels alone, each checked against the public call's bytes; Nsight Compute on three fp4
# variants; x_words' tails and corners through CUDA and NVIDIA's OpenCL.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
(cd $S && timeout 200 python3 quantsweep.py qsweep_s42c.json /tmp/qs.json > $OUT/run216-qsweep.log 2>&1)
echo "sweep rc $?"; cut -c1-160 $OUT/run216-qsweep.log
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 150 python3 - > $OUT/run216-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(13)
for be in ("cuda", "opencl"):
    for knobs in ({"x_words": True}, {"x_words": True, "per_lane": 32, "tiles": 2},
                  {"x_words": True, "log_buckets": True, "per_lane": 32, "tiles": 2}):
        rq.blockwise_knobs = lambda *a, k=knobs: dict(k)
        for name in ("nf4", "fp4", "blockwise8"):
            if name == "blockwise8" and knobs.get("per_lane"):
                continue
            for dt in (("f16", "bf16") if be == "cuda" else ("f16",)):
                for n in (3 * 8192 + 300, 4096 * 2 - 5, 77, 8192 * 5):
                    T.run(T.random_x(rng, (n,)), F.get(name), be, dt)
                x = T.random_x(rng, (6, 256)); x[1] *= np.float32(2.0**-20); x[2] = 0; x[3, ::3] = 0
                T.run(x, F.get(name), be, dt)
        print(be, knobs, "equal the reference")
PY
echo "corners rc $?"; tail -7 $OUT/run216-corners.log
(cd $S && timeout 100 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
  python3 quantncu.py qncu_s42c.json > $OUT/run216-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed|bank_conflicts|Achieved Occ|Theoretical Occ|Registers Per|Compute \(SM\)" $OUT/run216-ncu.txt | cut -c1-120
date -u +%H:%M:%S
