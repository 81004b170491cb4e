#!/usr/bin/env bash
# GPU run 207 (2026-12-03, session 40): the FP4 rows with 16-bit x as pairs, blockwise8 by log buckets,
# kernels alone before (b964f66, .gpu/base) and after; the device quantizer's GPU tests, compute-sanitizer,
# the corner blocks through CUDA (bf16 pairs too), the new kernels' SASS instruction counts.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 150 python3 quantsweep.py $([ $tree = base ] && echo qsweep_s40c_base.json || echo qsweep_s40c.json) /tmp/qs-$tree.json > $OUT/run207-qsweep-$tree.log 2>&1)
  echo "sweep $tree rc $?"; cut -c1-150 $OUT/run207-qsweep-$tree.log
done
date -u +%H:%M:%S
for f in mxfp4 nvfp4; do for dt in f16 bf16 f32; do
  python3 -m qkgen dump quantize $f -t cuda-sm90 --dtype $dt -o /tmp/sass > /dev/null
  nvcc -cubin -arch=sm_90 -o /tmp/sass/$f-$dt.cubin /tmp/sass/quantize_${f}_$dt.cu 2>&1 | tail -2
  echo "$f $dt: $(cuobjdump -sass /tmp/sass/$f-$dt.cubin | grep -cE '^\s+/\*[0-9a-f]{4}\*/') SASS instructions"
done; done
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_quantize_gpu.py tests/gpu/test_sanitizer.py --durations=3 > $OUT/run207-pytest.log 2>&1
echo "gpu tests rc $?"; tail -6 $OUT/run207-pytest.log | cut -c1-300; date -u +%H:%M:%S
# the corner blocks of tests/test_quantize_device.py (OpenCL and SYCL there) through CUDA
PYTHONPATH=$PWD/tests:${PYTHONPATH:-} timeout 120 python3 - > $OUT/run207-corners.log 2>&1 <<'PY'
import numpy as np, qkgen.formats as F
import test_quantize_device as T
rng = np.random.default_rng(5)
for name in T.FP4_ROWS:
    fmt = F.get(name)
    T.run(T.fp4_corner_x(fmt, rng), fmt, "cuda")
    for dt in ("f16", "bf16"):
        T.run(T.fp4_corner_x16(fmt, dt, rng), fmt, "cuda", dt)
        T.run(T.random_x(rng, (257, 3 * fmt.block), outliers=9), fmt, "cuda", dt)
    print(name, "corners equal the reference on CUDA")
T.test_ties_go_where_the_reference_sends_them("cuda", None)  # blockwise8's cuts, a subnormal absmax
for name in ("nf4", "fp4"):
    T.test_nested_statistics_and_their_offset("cuda", name, 64, rng, None)
for dt in ("f16", "bf16", "f32"):
    T.run(T.random_x(rng, (77, 4096), outliers=9), F.get("blockwise8"), "cuda", dt)
print("blockwise8 ties and nested statistics equal the reference on CUDA")
PY
echo "corners rc $?"; tail -4 $OUT/run207-corners.log
