#!/usr/bin/env bash
# GPU run 7 (2026-11-24): the lane-group q8_1 quantizer switched on (INT8DOT_LANE_GROUP = cuda) for the GPU
# suite and a llama.cpp comparison, then the same bench with it off.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
source .gpu/peers.sh
sed -i 's/^INT8DOT_LANE_GROUP: frozenset\[str\] = frozenset()$/INT8DOT_LANE_GROUP: frozenset[str] = frozenset({"cuda"})/' codegen/runtime/paths.py
grep -n "^INT8DOT_LANE_GROUP" codegen/runtime/paths.py
date -u +%H:%M:%S
timeout 280 python3 -m pytest -q -m gpu tests/gpu -k "not sanitizer and not decode_time" -p no:cacheprovider -x > $OUT/gputests.log 2>&1
echo "gpu tests (lane group on) rc $?"; tail -3 $OUT/gputests.log; date -u +%H:%M:%S
wait $PEERS_PID; echo "peers: $(ls $TBO 2>&1)"
B="python3 -m qkgen bench --backend cuda --iters 10 --no-compile-times --no-progress --op gemv --shapes 4096x14336 --dtypes f16 --m 1,8 --hot --host-calls 0 --no-bnb"
timeout 120 $B --formats q4_0,q4_1,q5_0,q5_1,q4_k --llamacpp $TBO --json $OUT/on.json --markdown $OUT/on.md > $OUT/on.log 2>&1; echo "bench on rc $?"
sed -i 's/^INT8DOT_LANE_GROUP: frozenset\[str\] = frozenset({"cuda"})$/INT8DOT_LANE_GROUP: frozenset[str] = frozenset()/' codegen/runtime/paths.py
grep -n "^INT8DOT_LANE_GROUP" codegen/runtime/paths.py
timeout 80 $B --formats q4_0,q4_1,q5_0,q5_1,q4_k --json $OUT/off.json --markdown $OUT/off.md > $OUT/off.log 2>&1; echo "bench off rc $?"
date -u +%H:%M:%S
for f in on off; do echo "== $f"; grep -E "^\| q" $OUT/$f.md | grep -E "int8dot|llama" | cut -d'|' -f2,6,7,8,11; done
