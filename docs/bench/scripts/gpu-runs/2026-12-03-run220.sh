#!/usr/bin/env bash
# GPU run 220 (2026-12-03, session 43): the int8dot path's kernels and the float GEMV alone on CUDA and
# on NVIDIA's OpenCL (oclptx.py: one source, two compilers), with OpenCL's PTX and both backends' SASS
# (ptxas / nvcc, cuobjdump) kept for comparison.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
S=$PWD/docs/bench/scripts; P=/tmp/run220; mkdir -p $P
CASES='[["quantize_q8_1","q8_1","f16",{}],["quantize_q8_1","q8_1","f32",{}],
 ["gemv_int8dot","q4_0","f16",{}],["gemv_int8dot","q4_1","f16",{}],["gemv_int8dot","q8_0","f16",{}],
 ["gemv","q4_0","f16",{}],["gemv","q8_0","f16",{}]]'
(cd $S && timeout 240 python3 oclptx.py "$CASES" $P $OUT/run220-oclptx.json) > $OUT/run220-oclptx.log 2>&1
echo "oclptx rc $?"; grep -E "^(==|cuda|opencl)" $OUT/run220-oclptx.log | cut -c1-150
cd $P
for f in *.cuda.src; do b=${f%.cuda.src}; cp $f $b.cu
  nvcc -cubin -arch=sm_90 -Xptxas -v $b.cu -o $b.cuda.cubin > $b.cuda.ptxas 2>&1; cuobjdump -sass $b.cuda.cubin > $b.cuda.sass; done
for f in *.ptx; do b=${f%.ptx}
  ptxas -arch=sm_90 -v $f -o $b.ocl.cubin > $b.ocl.ptxas 2>&1; cuobjdump -sass $b.ocl.cubin > $b.ocl.sass; done
grep -H "registers" *.ptxas | sed 's/ptxas info    ://' | cut -c1-160
for f in *.sass; do echo "$f $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $f) instr, LDG $(grep -c 'LDG' $f), LDG.E.CONSTANT $(grep -c 'LDG.E.*CONSTANT' $f)"; done
rm -f *.cubin; tar czf $OUT/run220-binaries.tgz .; date -u +%H:%M:%S
