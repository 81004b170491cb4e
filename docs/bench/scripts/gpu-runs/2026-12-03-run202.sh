#!/usr/bin/env bash
# GPU run 202 (2026-12-03, session 39): the x-reading kernels of the two-launch paths wait for the
# launch before them after their first W loads, not at their start (gemv_int8dot, gemv_int8frag,
# gemv_int8frag_sub). Public calls before (.gpu/base, the previous commit) and after, taking turns,
# int8dot at M = 1 and int8mma (W in fragments) at M = 8, f32 x (fragbench.py); the GPU tests of the
# chains (CUDA graphs, int8mma, NVIDIA's OpenCL).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts
for pass in 1 2; do for tree in base new; do
  pp=${PYTHONPATH:-}; [ $tree = base ] && pp=$PWD/.gpu/base:${PYTHONPATH:-}
  (cd $S && PYTHONPATH=$pp timeout 140 python3 fragbench.py /tmp/fb-$tree.json q4_0,q4_1,q8_0,q4_k,q6_k,nvfp4 8 4096x14336 1 fragments > $OUT/run202-paths-$tree-$pass.log 2>&1)
  echo "fragbench $tree pass $pass rc $?"
done; done
python3 - $OUT <<'PY'
import sys, re, glob, collections
t = collections.defaultdict(dict)
for f in sorted(glob.glob(sys.argv[1] + "/run202-paths-*.log")):
    tree, p = re.search(r"paths-(\w+)-(\d)", f).groups()
    for ln in open(f):
        m = re.match(r"(\S+)\s+m(\d)\s+(\w+)\s+\S+\s+cold\s+([\d.]+) us.*hot\s+([\d.]+)", ln)
        if m: t[(m[1], m[2], m[3])][tree + p] = (float(m[4]), float(m[5]))
for k, v in t.items():
    print(f"{k[0]:6} m{k[1]} {k[2]:8}", "  ".join(f"{c}: {v[c][0]:5.1f}/{v[c][1]:5.1f}" for c in sorted(v)))
PY
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cuda_graph.py tests/gpu/test_int8mma_gpu.py tests/gpu/test_opencl_nvidia.py > $OUT/run202-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run202-pytest.log | cut -c1-300; date -u +%H:%M:%S
