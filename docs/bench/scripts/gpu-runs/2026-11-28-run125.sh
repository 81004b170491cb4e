#!/usr/bin/env bash
# GPU run 125 (2026-11-28, session 26): a what-if probe (l2_prefetch_probe.py): the int8dot path's
# quantize_q8_1 patched to prefetch every weight row's head into L2 while it runs, M = 1, cold and hot;
# then host time per call (hostbench.py), the f32 mma path at M = 8 with x rounded first and in the
# kernel included.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
timeout 240 python3 l2_prefetch_probe.py $OUT/l2pf_f32.json q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q6_k f32 0,256,512,1024,2304,0 > $OUT/l2pf.log 2>&1
echo "probe rc $?"; cat $OUT/l2pf.log; date -u +%H:%M:%S
timeout 200 python3 hostbench.py new > $OUT/host.log 2>&1
echo "host rc $?"; grep "^\[new\]" $OUT/host.log | cut -c1-150; date -u +%H:%M:%S
# (As run: the first attempt stopped in the probe on a binding error (q8_1 buffer passed as a launch
# value where an array was wanted), after which hostbench ran; the probe, fixed, then ran alone with the
# hostbench lines commented out.)
