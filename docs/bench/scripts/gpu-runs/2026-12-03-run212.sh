#!/usr/bin/env bash
# GPU run 212 (2026-12-03, session 41): quantize_blockwise with |c| raised to LO by a float maximum (the sign a free
# operand modifier); kernels alone against run 210's tree (9c93d56, .gpu/mid2); both trees' SASS for the f16
# kernel; the GPU tests and compute-sanitizer; ties, tiles and odd sizes through CUDA and NVIDIA's OpenCL.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in mid new; do
  pp=${PYTHONPATH:-}; [ $tree = mid ] && pp=$PWD/.gpu/mid2:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 200 python3 quantsweep.py $([ $tree = mid ] && echo qsweep_s41c_mid.json || echo qsweep_s41c.json) /tmp/qs-$tree.json > $OUT/run212-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run212-qsweep-$tree.log
done
for tree in mid new; do
  pp=${PYTHONPATH:-}; [ $tree = mid ] && pp=$PWD/.gpu/mid2:${PYTHONPATH:-}
  PYTHONPATH=$pp python3 -m qkgen dump quantize_blockwise blockwise8 -t cuda-sm90 --dtype f16 -o /tmp/sass-$tree > /dev/null
  nvcc -cubin -arch=sm_90 -o /tmp/sass-$tree/k.cubin /tmp/sass-$tree/quantize_blockwise_blockwise8_bs256_f16*.cu 2>&1 | tail -2
  cuobjdump -sass /tmp/sass-$tree/k.cubin > $OUT/run212-sass-$tree.txt
  echo "$tree: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/run212-sass-$tree.txt) SASS instructions"
done
date -u +%H:%M:%S
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 200 python3 - > $OUT/run212-corners.log 2>&1 <<'PY'
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
echo "corners rc $?"; tail -12 $OUT/run212-corners.log
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_sanitizer.py --durations=3 > $OUT/run212-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run212-pytest.log | cut -c1-300; date -u +%H:%M:%S
date -u +%H:%M:%S
