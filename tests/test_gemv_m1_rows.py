"""The M = 1 float GEMV with the knobs CUDA takes for nf4, fp4 and int8 with 16-bit x (4 rows a lane
group, teams of 4 lane groups: runtime.paths.FLOAT_M1_KNOBS) or with 8 rows a lane group, on Intel's
CPU OpenCL, SYCL, and OpenCL rendered without sub-groups: every row the float path takes, 67 rows (not
a multiple of 4 or 8: rows past N), K with a tail step, within the f32 bound of the float64 product;
poisoned outputs. The M = 1 decode runs 8 elements at a time; these shapes put 4 and 8 rows' codes
of each group in registers at once."""

import pytest

from qkgen.kernels.ops import get_op

from .matrix import spread
from .test_gemv_prefetch import KW
from .test_gemv_stage_x import TARGETS, _assert_close, _case, _run, devices  # noqa: F401 (a fixture)

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

ROWS = get_op("gemv").formats()
KNOBS = [{"rpw": 4, "slices": 4}, {"rpw": 8, "slices": 2}]

# Each row with one knob set and dtype, the rows taking the two in turn and the targets in turn
# (tests/matrix.py; QKGEN_FULL_MATRIX: every target).
CASES = [pytest.param(where, name, dtype, knobs, id=f"{where}-{name}-{dtype}-rpw{knobs['rpw']}-slices{knobs['slices']}")
         for (name, (dtype, knobs)), where in spread(
             [(n, (("f16", "bf16")[i % 2], KNOBS[i % 2])) for i, n in enumerate(ROWS)], TARGETS,
             lambda c: c[1][0])]  # fmt: skip


@pytest.mark.parametrize("where, name, dtype, knobs", CASES)
def test_m1_rows_match_reference(where, name, dtype, knobs, devices, rng, poisoned):
    dev, ks, qt, x = _case(devices, where, name, KW.get(name, {}), dtype, 1, 1, rng, stage=False, **knobs)
    assert ks.param("rpw") == knobs["rpw"] and ks.param("slices") == knobs["slices"]
    assert f"float v[{knobs['rpw']}][8];" in ks.source  # the M = 1 decode, 8 elements at a time
    _assert_close(_run(dev, ks, qt, x, 1), x, qt, dtype)
