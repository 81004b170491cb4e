#!/usr/bin/env bash
# GPU run 12 (2026-11-25): quantizer kernels alone (quantsweep, sweep 1) and ncu on quantize_blockwise nf4.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
cd docs/bench/scripts
timeout 300 python3 quantsweep.py qsweep1.json $OUT/qsweep1.json > $OUT/qsweep1.log 2>&1; echo "quantsweep rc $?"
cat > /tmp/nf4q.py <<'PY'
import torch, qkgen
x = torch.randn(4096, 14336, device="cuda", dtype=torch.float16)
for _ in range(2): qkgen.quantize(x, "nf4", blocksize=64)
torch.cuda.synchronize()
PY
timeout 150 ncu --kernel-name regex:quantize_blockwise --launch-skip 1 --launch-count 1 --section SpeedOfLight \
  --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
  python3 /tmp/nf4q.py > $OUT/ncu_nf4q.txt 2>&1; echo "ncu rc $?"
date -u +%H:%M:%S
cat $OUT/qsweep1.log
grep -E "Duration|Throughput|Registers|Achieved Occ|Theoretical Occ|Warp Cycles Per Issued|Executed Ipc A|Stall|L1/TEX Hit|Est. Local" $OUT/ncu_nf4q.txt | head -30
