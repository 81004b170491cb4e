#!/usr/bin/env bash
# GPU run 9 (2026-11-25): where the device quantizer's time goes (torch.profiler per format), and ncu's
# view of the nf4 nested GEMV kernel at M = 1 (what limits it: memory, LDS or issue).
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S
cd docs/bench/scripts
timeout 240 python3 quantprofile.py $OUT/quantprofile.txt > $OUT/quantprofile.log 2>&1; echo "quantprofile rc $?"
cd ../../..
cat > /tmp/nf4one.py <<'PY'
import torch, qkgen
w = torch.randn(4096, 14336, device="cuda", dtype=torch.bfloat16)
qt = qkgen.quantize(w, "nf4", blocksize=64, nested=True)
x = torch.randn(1, 14336, device="cuda", dtype=torch.bfloat16)
for _ in range(3): y = qkgen.gemv(qt, x)
torch.cuda.synchronize()
PY
timeout 200 ncu --kernel-name regex:gemv --launch-skip 1 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats python3 /tmp/nf4one.py > $OUT/ncu_nf4.txt 2>&1
echo "ncu rc $?"; date -u +%H:%M:%S
grep -E "^==|dev " $OUT/quantprofile.txt | head -120
