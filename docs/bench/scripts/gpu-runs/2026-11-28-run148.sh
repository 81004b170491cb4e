#!/usr/bin/env bash
# GPU run 148 (2026-11-28, session 29): sweep 50, dequantize to bf16 with each pair of outputs rounded
# by one paired conversion (a source patch), against the kernels as they are; then Nsight Compute on
# dequantize nf4 nested -> bf16, 8192 x 8192 (what keeps it at three quarters of the copy ceiling).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; git log --oneline -1
cd docs/bench/scripts
timeout 300 python3 gemv_sweep.py sweep50_dequantize_pairs.json $OUT/sweep50.json > $OUT/sweep50.log 2>&1
echo "sweep rc $?"; cut -c1-120 $OUT/sweep50.log; date -u +%H:%M:%S
cat > /tmp/dq.py <<'PY'
import torch, qkgen
torch.manual_seed(0)
qt = qkgen.quantize(torch.randn(8192, 8192, device="cuda"), "nf4", nested=True)
for _ in range(30):
    qkgen.dequantize(qt, "bf16")
torch.cuda.synchronize()
PY
timeout 120 ncu --kernel-name regex:dequantize_nf4 --launch-skip 20 --launch-count 1 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
  --section InstructionStats --section SchedulerStats python3 /tmp/dq.py > $OUT/ncu_dequantize_nf4.txt 2>&1
echo "ncu rc $?"
grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Stall [A-Z]|Warp Cycles Per Issued|Executed Ipc A|Executed Instructions  |L1/TEX Hit|Mem Busy|Max Bandwidth|Issue Slots|No Eligible|One or More" $OUT/ncu_dequantize_nf4.txt | sed 's/  */ /g' | head -40
date -u +%H:%M:%S
