#!/usr/bin/env bash
# GPU run 132 (2026-11-28, session 27, an H200): gemv_int8dot with x_inline (tree of 0bb2df1, since
# reverted) against the two launches, M = 1, cold and hot, y compared bit for bit.
source .gpu/setup.sh > $OUT/setup.log 2>&1; cd docs/bench/scripts && python3 xinline_probe.py $OUT/x1.json q5_1:1:f32,q4_0:1:f32,q5_0:1:f32,q4_1:1:f32,q8_0:1:f32,q4_0:1:f16 '[{}, {"rpw":4}, {"rpw":8}, {"rpw":4,"slices":2}, {"rpw":8,"slices":2}, {"rpw":8,"slices":1}, {"rpw":4,"slices":1,"wg":64}]' 2>&1 | tee $OUT/x1.log | grep -v Warn
