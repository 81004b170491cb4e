#!/usr/bin/env bash
# GPU run 183 (2026-12-02, session 34): programmatic dependent launch again, now that the device's
# own target has grid_dependency (session 26's commit gave it to the profiles only, so its public
# calls never waited in-kernel), and gemv_int8dot asking L2 for its work-group's W before it waits
# (early_lines). The GPU tests of the two-launch paths, then qkgen bench on public calls for three
# trees: 19e4f18 (.gpu/base), this tree with early_lines 0 (.gpu/pdl0), and this tree (early_lines 2).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cuda_graph.py tests/gpu/test_int8mma_gpu.py \
  tests/gpu/test_gemv_out.py tests/gpu/test_large_offsets_gpu.py tests/gpu/test_cuda_ops.py \
  "tests/gpu/test_gemv_mma_gpu.py::test_round_x_torch_and_graph" > $OUT/pytest.log 2>&1
echo "gpu tests rc $?"; tail -3 $OUT/pytest.log | cut -c1-300; date -u +%H:%M:%S
for tree in base pdl0 new; do
  pp=${PYTHONPATH:-}; [ $tree != new ] && pp=$PWD/.gpu/$tree:${PYTHONPATH:-}
  s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 110 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1,8 \
    --dtypes f32 --formats q4_0,q4_1,q5_0,q5_1,q8_0 --no-bnb --no-compile-times --no-progress \
    --json /tmp/g-$tree.json --markdown $OUT/run183-gemv-gguf-f32-$tree.md > /tmp/g-$tree.log 2>&1)
  echo "$tree rc $? in $(( $(date +%s) - s )) s"; grep -A14 "^## Summary" $OUT/run183-gemv-gguf-f32-$tree.md | cut -c1-220
done
date -u +%H:%M:%S
