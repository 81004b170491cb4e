#!/usr/bin/env bash
# GPU run 210 (2026-12-03, session 41): quantize_blockwise with the block's absmax within a sub-group
# (butterfly shuffles), no clamp on the fast path; kernels alone against run 209's tree (af493d4,
# .gpu/mid) and bce63b4 (.gpu/base, blockwise8 only); public calls; the GPU tests and
# compute-sanitizer; ties and tiles through CUDA and NVIDIA's OpenCL (PTX shuffles); Nsight Compute.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in mid new; do
  pp=${PYTHONPATH:-}; [ $tree = mid ] && pp=$PWD/.gpu/mid:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 200 python3 quantsweep.py $([ $tree = mid ] && echo qsweep_s41b_mid.json || echo qsweep_s41b.json) /tmp/qs-$tree.json > $OUT/run210-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run210-qsweep-$tree.log
done
(cd $S && timeout 150 python3 quantprofile.py $OUT/run210-calls-new.txt blockwise8,nf4,fp4 f16,bf16,f32 > /dev/null 2>&1)
echo "calls new rc $?"; grep -E "^==|dev " $OUT/run210-calls-new.txt | cut -c1-120
date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 200 python3 - > $OUT/run210-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(10)
keep = rq.blockwise_knobs
for be in ("cuda", "opencl"):
    T.test_ties_go_where_the_reference_sends_them(be, None)
    print(be, "ties equal the reference")
    for name, tiles in (("blockwise8", 4), ("blockwise8", 3), ("nf4", 3), ("fp4", 2)):
        for dt in (("f16", "bf16", "f32") if be == "cuda" else ("f16", "f32")):
            rq.blockwise_knobs = lambda *a, t=tiles, k=keep: {**k(*a), "tiles": t}
            span = 256 * 16
            for n in (2 * tiles * span + 300, (tiles + 1) * span + span // 2 + 37, tiles * span, tiles * span - 5):
                T.run(T.random_x(rng, (n,)), F.get(name), be, dt)
        print(be, name, "tiles", tiles, "equal the reference")
    rq.blockwise_knobs = keep
    for name in ("nf4", "fp4", "blockwise8"):
        for shape in T.shapes(F.get(name)):
            T.run(T.random_x(rng, shape), F.get(name), be)
        T.run(T.random_x(rng, (5, 4099)), F.get(name), be, blocksize=64)
    print(be, "odd sizes equal the reference")
PY
echo "corners rc $?"; tail -12 $OUT/run210-corners.log
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_sanitizer.py --durations=3 > $OUT/run210-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run210-pytest.log | cut -c1-300; date -u +%H:%M:%S
(cd $S && timeout 100 ncu --profile-from-start off --section SpeedOfLight --section Occupancy --section WarpStateStats \
  --metrics smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
  python3 quantncu.py qncu_s41b.json > $OUT/run210-ncu.txt 2>&1)
echo "ncu rc $?"; grep -E "^  [a-z_0-9]+quantize|Duration|inst_executed|bank_conflicts|Achieved Occ|Warp Cycles Per Issued|DRAM Through" $OUT/run210-ncu.txt | cut -c1-120
date -u +%H:%M:%S
