#!/usr/bin/env bash
# GPU run 84 (2026-11-26): 2-byte aligned code runs loaded as words and moved down 16 bits by one
# funnel shift (CUDA's __funnelshift_r) instead of shifts and a select: the int8dot kernels of the
# 2-byte aligned rows and two mma kernels, kernel alone (sweep 39), the previous commit's tree (old/,
# through PYTHONPATH) and this one, twice each, alternating.
set -u
source .gpu/setup.sh > $OUT/setup.log 2>&1 || { cat $OUT/setup.log; exit 1; }
date -u +%H:%M:%S; nvidia-smi --query-gpu=name --format=csv,noheader
cd docs/bench/scripts
for i in 1 2; do
  PYTHONPATH=$PWD/../../../old:$PYTHONPATH timeout 150 python3 gemv_sweep.py sweep39_funnel.json $OUT/old$i.json > $OUT/old$i.log 2>&1; echo "old $i rc $?"
  timeout 150 python3 gemv_sweep.py sweep39_funnel.json $OUT/new$i.json > $OUT/new$i.log 2>&1; echo "new $i rc $?"
done
python3 -c "
import json, sys
r = {t: json.load(open(f'$OUT/{t}.json'))['rows'] for t in ('old1', 'old2', 'new1', 'new2')}
for i, row in enumerate(r['old1']):
    c = [r[t][i]['cold_us'] for t in ('old1', 'old2', 'new1', 'new2')]
    print(row['fmt'], 'm%d' % row['m'], row['ov'].get('op'), 'old %.1f %.1f  new %.1f %.1f' % tuple(c))
"
date -u +%H:%M:%S
