#!/usr/bin/env bash
# GPU run 196 (2026-12-02, session 38): this tree's public calls at its defaults, the super-block
# rows and the FP4 rows with f32 x at M = 1 and 8 against llama.cpp's test-backend-ops (built in the
# background meanwhile, peers.sh), and the same rows at session start (c8e01fd, .gpu/base), no
# llama.cpp; the GPU tests of the fragments kernels and the super-block rows on the final tree first.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader; rm -f $OUT/setup.log
source .gpu/peers.sh > /tmp/peers.log 2>&1
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu -k "q2_k or nvfp4 or mxfp4 or frag" > $OUT/run196-pytest.log 2>&1
echo "gpu tests rc $?"; tail -2 $OUT/run196-pytest.log | cut -c1-300; date -u +%H:%M:%S
bench() {  # tree, tag, extra options
  local pp=${PYTHONPATH:-}; [ $1 != new ] && pp=$PWD/.gpu/$1:${PYTHONPATH:-}
  local s=$(date +%s)
  (cd /tmp && PYTHONPATH=$pp timeout 170 python3 -m qkgen bench --backend cuda --op gemv --shapes 4096x14336 --m 1,8 \
    --dtypes f32 --formats q2_k,q3_k,q4_k,q5_k,q6_k,mxfp4,nvfp4 --no-bnb ${3:-} --no-compile-times --no-progress \
    --json /tmp/$2-$1.json --markdown $OUT/run196-$2-$1.md > /tmp/$2-$1.log 2>&1)
  echo "$2 $1 rc $? in $(( $(date +%s) - s )) s"; grep -A20 "^## Summary" $OUT/run196-$2-$1.md | tail -n +5 | grep "^|" | cut -c1-230
}
bench base sub
date -u +%H:%M:%S; wait $PEERS_PID; echo "peers rc $? $(ls -la $TBO 2>&1 | cut -c1-80)"; date -u +%H:%M:%S
bench new sub "--llamacpp $TBO"
date -u +%H:%M:%S
