#!/usr/bin/env bash
# GPU run 218 (2026-12-03, session 42): the linear buckets' base table as the keys' byte offsets (4 x the
# count) against the tree before it (.gpu/mid, 53a9c45), and a register budget
# for quantize_blockwise (knob min_groups: __launch_bounds__(256, 8), 32 registers, no spills by ptxas) and
# mxfp4 (24 a compute unit, 39 registers),
# kernels alone, each checked against the public call's bytes; corners through CUDA and NVIDIA's OpenCL.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in mid new; do
  pp=${PYTHONPATH:-}; [ $tree = mid ] && pp=$PWD/.gpu/mid:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantsweep.py $([ $tree = mid ] && echo qsweep_s42e_mid.json || echo qsweep_s42e.json) /tmp/qs-$tree.json > $OUT/run218-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run218-qsweep-$tree.log
done
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 150 python3 - > $OUT/run218-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
from qkgen.runtime import quantize as rq
import qkgen.runtime.plan as P
P.POISON_OUTPUTS = True
rng = np.random.default_rng(14)
keep = rq.blockwise_knobs
for be in ("cuda", "opencl"):
    T.test_ties_go_where_the_reference_sends_them(be, None)
    for knobs in ({}, {"min_groups": 8}):
        rq.blockwise_knobs = lambda *a, k=knobs: {**keep(*a), **k}
        for name in ("nf4", "fp4", "blockwise8"):
            for dt in (("f16", "bf16", "f32") if be == "cuda" else ("f16", "f32")):
                for n in (3 * 16384 + 300, 16384 - 5, 77):
                    T.run(T.random_x(rng, (n,)), F.get(name), be, dt)
            T.test_blockwise_extreme_absmax(be, name, rng, None)
        print(be, knobs, "ties, tails and extreme absmax equal the reference")
    rq.blockwise_knobs = keep
PY
echo "corners rc $?"; grep -v Warn $OUT/run218-corners.log | tail -4
date -u +%H:%M:%S
