#!/usr/bin/env bash
# GPU run 186 (2026-12-02, session 37): Nsight Compute's view of the device quantizer kernels alone
# (what limits each: nf4 / fp4 / blockwise8 / mxfp4 / nvfp4 / q4_k / q6_k, x [4096, 14336]), then the
# GPU tests not run on this tree yet (CUDA ops, int8mma, large offsets, the model, NVIDIA's OpenCL).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=docs/bench/scripts
(cd $S && timeout 200 ncu --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
  --section SchedulerStats --section InstructionStats \
  --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_xu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fp16.sum \
  python3 quantncu.py qncu_s37.json > $OUT/ncu-quant.txt 2>&1)
echo "ncu rc $?"; grep -c "^  [a-z_0-9]*quantize" $OUT/ncu-quant.txt; date -u +%H:%M:%S
timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cuda_gpu.py tests/gpu/test_cuda_ops.py \
  tests/gpu/test_int8mma_gpu.py tests/gpu/test_large_offsets_gpu.py tests/gpu/test_model_gpu.py \
  tests/gpu/test_opencl_nvidia.py --durations=8 > $OUT/pytest.log 2>&1
echo "gpu tests rc $?"; tail -12 $OUT/pytest.log | cut -c1-300; date -u +%H:%M:%S
