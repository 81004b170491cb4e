"""The exact mean of float32 values (the nested bitsandbytes offset): codec.exact_mean_f32 on the host
against a brute-force Fraction mean, and the exact_sum kernel (runtime.reduce.device_exact_mean) on
every CPU device here against both: bit for bit, for random values with negatives, subnormals and
exponents over the whole float32 range, odd sizes and sizes off the work-group, the largest terms a
group may add, non-finite values and bad input."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from qkgen.backends import get, open_device
from qkgen.errors import BuildError, QKGenValueError
from qkgen.formats import reference
from qkgen.formats.codec import EXACT_BINS, exact_mean_f32, f32_bins, mean_f32, mean_from_bins, nearest_f32
from qkgen.kernels.ops import get_op
from qkgen.kernels.ops.exact_sum import MAX_N, MAX_PER_GROUP, SLOTS, group_slots, launch_sizes
from qkgen.kernels.render import render
from qkgen.runtime.plan import Plan, ready
from qkgen.runtime.reduce import device_exact_mean, device_exact_slots
from qkgen.tools.catalog import variants

pytestmark = pytest.mark.quick_build  # kernel variants: built without the optimizer (tests/conftest.py)

F32 = np.float32
TINY = 2.0**-149  # the smallest subnormal float32


def bits(v) -> int:
    return int(np.asarray(v, F32).view(np.uint32))


def brute_mean(x) -> F32:
    """The float32 nearest to the exact mean (ties to even), by Fractions and a neighbour search."""
    exact = sum((Fraction(float(v)) for v in np.asarray(x, F32).reshape(-1)), Fraction(0)) / np.size(x)
    guess = F32(float(exact))  # within an ulp: the nearest is it or a neighbour
    with np.errstate(over="ignore"):  # the neighbour past the largest float32 is inf: left out
        near = [c for c in (np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf)))
                if np.isfinite(c)]  # fmt: skip
    return min(near, key=lambda c: (abs(Fraction(float(c)) - exact), bits(c) & 1))


def wide_values(rng, n: int) -> np.ndarray:
    """Normal values times 2^e for e over most of the range: negatives, subnormals, huge ones."""
    return (rng.standard_normal(n) * np.exp2(rng.integers(-150, 110, n))).astype(F32)


def random_bits(rng, n: int) -> np.ndarray:
    """Any finite float32 bit pattern (infinity and NaN patterns moved to zero)."""
    x = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(F32)
    return np.where(np.isfinite(x), x, F32(0)).astype(F32)


# ---- the host: codec.exact_mean_f32, f32_bins, mean_from_bins ----


@pytest.mark.parametrize("kind", ["normal", "wide", "bits", "subnormal", "huge", "non-negative"])
def test_exact_mean_equals_the_brute_force_mean(kind, rng):
    for n in (1, 2, 3, 7, 64, 333):
        x = {"normal": lambda: rng.standard_normal(n).astype(F32),
             "wide": lambda: wide_values(rng, n),
             "bits": lambda: random_bits(rng, n),
             "subnormal": lambda: (rng.integers(-(1 << 23), 1 << 23, n) * TINY).astype(F32),
             "huge": lambda: (F32(3.4e38) * rng.random(n)).astype(F32),
             "non-negative": lambda: np.abs(wide_values(rng, n))}[kind]()  # fmt: skip
        assert bits(exact_mean_f32(x)) == bits(brute_mean(x)), (kind, x)


def test_ties_go_to_even_and_no_rounding_happens_twice():
    ulp = 2.0**-23  # of values in [1, 2)
    cases = [
        ([1.0, 1.0 + ulp], 1.0),  # halfway between 1 and 1 + ulp: the even one, 1
        ([1.0 + ulp, 1.0 + 2 * ulp], 1.0 + 2 * ulp),  # halfway: the even one above
        ([0.0, TINY], 0.0),  # a subnormal tie: 0.5 ulp -> 0
        ([0.0, 3 * TINY], 2 * TINY),  # 1.5 ulp -> 2
        ([-TINY, 0.0], -0.0),  # -0.5 ulp -> -0: a negative mean keeps its sign; an exact zero is +0
        ([-TINY, TINY], 0.0),
        ([2.0**-126, 0.0, 0.0, 2.0**-126 - TINY], 2.0**-127),  # normal and subnormal inputs, a subnormal mean
        # the exact mean 1 + ulp + ulp/2 - 2^-60 lies just below a tie: 1 + ulp. Through float64 the sum
        # loses the 2^-58, lands on the tie and goes to the even 1 + 2 ulp: mean_f32 rounds twice.
        ([4.0 + 4 * ulp, 2 * ulp, -(2.0**-58), 0.0], 1.0 + ulp),
    ]
    for x, want in cases:
        got = exact_mean_f32(np.array(x, F32))
        assert bits(got) == bits(want), (x, got)
        assert bits(got) == bits(brute_mean(np.array(x, F32))) or got == want == 0, (x, got)
    assert mean_f32(np.array(cases[-1][0], F32)) == F32(1.0 + 2 * ulp)  # the double rounding it avoids


def test_extremes_of_the_range():
    big = np.finfo(F32).max
    for x in ([big, big], [big, -big, big], [-big] * 5, [TINY] * 9, [TINY, -TINY]):
        x = np.array(x, F32)
        assert bits(exact_mean_f32(x)) == bits(brute_mean(x)), x
    assert exact_mean_f32(np.array([big, big], F32)) == big  # no overflow on the way: the sum is an integer


def test_bins_hold_the_exact_sum():
    x = np.array([1.0, -2.5, TINY, 3 * 2.0**100, -(2.0**-126), np.inf, np.nan], F32)
    bins, nonfinite = f32_bins(x)
    assert len(bins) == EXACT_BINS and nonfinite == 2
    total = sum(b << (16 * k) for k, b in enumerate(bins))
    assert Fraction(total) * Fraction(TINY) == sum(Fraction(float(v)) for v in x[:5])


def test_mean_from_bins_rounds_beyond_the_range_to_inf():
    top = [0] * EXACT_BINS
    top[15] = 1 << 40  # 2^(40 + 240 - 149) = 2^131
    assert mean_from_bins(top, 1) == np.inf and mean_from_bins([-b for b in top], 1) == -np.inf
    assert mean_from_bins(top, 1 << 4) == F32(2.0**127)
    assert nearest_f32((1 << 24) - 1, 2) == F32(((1 << 24) - 1) / 2 * TINY)  # a subnormal half, to even
    assert mean_from_bins(np.zeros(EXACT_BINS, np.int64), 3) == 0


def test_bad_input_is_refused():
    with pytest.raises(QKGenValueError, match=r"absmax: no values; allowed: at least one"):
        exact_mean_f32(np.zeros(0, F32), "absmax")
    with pytest.raises(QKGenValueError, match=r"a: inf at index 2 is not finite; allowed: finite values"):
        exact_mean_f32(np.array([1, 2, np.inf], F32))
    with pytest.raises(QKGenValueError, match=r"bins: 3 values; allowed: 16 integers"):
        mean_from_bins([1, 2, 3], 1)
    for count in (0, -1, True, 1.5):
        with pytest.raises(QKGenValueError, match=r"count: .*; allowed: an int >= 1"):
            mean_from_bins([0] * EXACT_BINS, count)


def test_the_nested_offset_is_the_exact_mean(rng):
    x = rng.standard_normal((7, 4096)).astype(F32)
    qt = reference.quantize(x, "nf4", nested=True)
    absmax = np.abs(x.reshape(-1, 64)).max(axis=1)
    assert qt.offset == float(exact_mean_f32(absmax))
    _, _, off = reference.nest_absmax(absmax, "nf4", offset=0.25)  # bitsandbytes' own offset: kept as given
    assert off == 0.25
    x[3, 5] = np.nan  # allow_nonfinite: no exact mean, IEEE arithmetic's NaN as before
    assert np.isnan(reference.quantize(x, "nf4", nested=True, allow_nonfinite=True).offset)


# ---- the kernel: render and catalog ----


def test_one_kernel_that_names_no_format():
    ks = render("exact_sum", None, "cuda")
    assert ks.name == "exact_sum_f32" and "format:   none" in ks.source and ks.format == ""
    assert render("exact_sum", "q4_0", "cuda").source == ks.source  # a row named is ignored
    assert render("exact_sum", None, "opencl", wg=64).name == "exact_sum_f32_wg64"
    assert [v for v in variants("exact_sum")] == [{"op": "exact_sum", "format": "nf4", "dtype": "f32"}]
    assert not list(variants("exact_sum", ["q4_0"])) and get_op("exact_sum").format_free
    spellings = {"opencl": "__global long* restrict bins", "cuda": "long long* __restrict__ bins",
                 "sycl": "work_group_memory<long long[]> part"}  # 64-bit everywhere
    for backend, spelling in spellings.items():
        assert spelling in render("exact_sum", None, backend).source


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(nested=True), r"nested: True; exact_sum reads no format row; allowed: False"),
        (dict(blocksize=64), r"blocksize: 64; exact_sum reads no format row; allowed: None"),
        (dict(scale_mode="row"), r"scale_mode: 'row'; exact_sum reads no format row"),
        (dict(dtype="f16"), r"dtype: 'f16' is not supported; allowed: f32"),
        (dict(wg=512), r"wg: 512; allowed: a power of two up to 256"),
        (dict(format="nf5"), r"format: unknown format 'nf5'"),
    ],
)
def test_render_refuses(kw, match):
    fmt = kw.pop("format", None)
    with pytest.raises(QKGenValueError, match=match):
        render("exact_sum", fmt, "opencl", **kw)


def test_launch_sizes():
    assert launch_sizes(1, 128) == {"n": 1, "per_group": 128, "groups": 1}
    assert launch_sizes(1000003, 128) == {"n": 1000003, "per_group": 2048, "groups": 489}
    assert launch_sizes(1000003, 128, groups=64) == {"n": 1000003, "per_group": 15744, "groups": 64}
    s = launch_sizes(MAX_N, 256)  # more groups than asked where a group would take 2^24 values
    assert s["per_group"] < 1 << 24 and s["per_group"] % 256 == 0 and s["groups"] * s["per_group"] >= MAX_N
    for bad in (0, MAX_N + 1, True, 2.0):
        with pytest.raises(QKGenValueError, match=r"n: .*; allowed: an int in 1\.\.2147483647"):
            launch_sizes(bad, 128)
    with pytest.raises(QKGenValueError, match=r"groups: 0; allowed"):
        launch_sizes(10, 128, groups=0)


# ---- the kernel on every CPU device here ----

DEVICES = []
for _name in ("opencl", "sycl"):
    if get(_name).is_available():
        DEVICES += [pytest.param((_name, d.index), id=f"{_name}-{d.index}") for d in get(_name).devices()]


NO_DEVICE = pytest.param((None, None), marks=pytest.mark.skip("no OpenCL or SYCL device"))


@pytest.fixture(params=DEVICES or [NO_DEVICE])
def dev(request):
    backend, index = request.param
    d = open_device(backend, index)
    try:
        d.compile(render("exact_sum", None, d.target))
    except BuildError as e:
        if "unknown target CPU" in e.log:  # pocl's LLVM does not know this host's CPU
            pytest.skip(f"{d.info.name} cannot compile OpenCL C on this host")
        raise
    return d


def assert_device_mean(d, x, n=None, groups=64):
    n = x.size if n is None else n
    got = device_exact_slots(d, x, n, groups)
    per_group = launch_sizes(n, render("exact_sum", None, d.target).wg, groups)["per_group"]
    np.testing.assert_array_equal(got, group_slots(x[:n], per_group))
    mean = device_exact_mean(d, x, n, groups)
    assert bits(mean) == bits(exact_mean_f32(x[:n]))
    return mean


@pytest.mark.parametrize("n", [1, 7, 127, 128, 129, 1000, 8191, 1000003])
def test_device_mean_equals_the_host_mean(dev, n, rng, poisoned):
    x = wide_values(rng, n)
    k = max(1, n // 9)  # a ninth subnormal
    x[rng.integers(0, n, k)] = (rng.integers(-(1 << 23), 1 << 23, k) * TINY).astype(F32)
    mean = assert_device_mean(dev, x)
    if n <= 1000:
        assert bits(mean) == bits(brute_mean(x))
    assert_device_mean(dev, np.abs(x))  # non-negative, as absmax is


def test_any_group_count_and_a_prefix(dev, rng, poisoned):
    x = random_bits(rng, 5000)
    for groups in (1, 3, 1000):
        assert_device_mean(dev, x, groups=groups)
    assert_device_mean(dev, x, n=4321)  # the first n values only


@pytest.mark.parametrize("wg", [1, 32, 256])
def test_other_work_group_sizes(dev, wg, rng, poisoned):
    """The tree over 1 .. 256 columns, and fewer work-items than slots (each writes several)."""
    x = wide_values(rng, 3001)
    plan = Plan.make(dev, "exact_sum", None, wg=wg)
    sizes = launch_sizes(x.size, wg, groups=5)
    ((buf, arr, _),) = plan.outputs(sizes).values()
    plan.launch({"x": x, "bins": buf}, sizes)
    got = dev.download(arr, "i64", sizes["groups"] * SLOTS).reshape(-1, SLOTS)
    np.testing.assert_array_equal(got, group_slots(x, sizes["per_group"]))
    more = {**sizes, "groups": sizes["groups"] + 2}  # groups past the end write zeros, read nothing
    ((buf, arr, _),) = plan.outputs(more).values()
    plan.launch({"x": x, "bins": buf}, more)
    got = dev.download(arr, "i64", more["groups"] * SLOTS).reshape(-1, SLOTS)
    np.testing.assert_array_equal(got[: sizes["groups"]], group_slots(x, sizes["per_group"]))
    assert not got[sizes["groups"] :].any()


def test_the_largest_terms_a_group_adds(dev, poisoned):
    """A group of 2^24 - 128 values of the largest term (m = 2^24 - 1 shifted by 15): its bin is
    within 2^48 of 2^63 and must not overflow; negated too."""
    n = MAX_PER_GROUP // 128 * 128
    top = F32(((1 << 24) - 1) * 2.0**90)  # s = 239: bin 14, shift 15
    x = np.full(n, top, F32)
    assert launch_sizes(n, 128, groups=1)["groups"] == 1
    slots = device_exact_slots(dev, x, n, groups=1)
    assert int(slots[0, 14]) == n * ((1 << 24) - 1) << 15 and not slots[0, :14].any()
    assert device_exact_mean(dev, x, n, groups=1) == top
    assert device_exact_mean(dev, -x, n, groups=1) == -top


def test_non_finite_values_are_counted_and_refused(dev, rng, poisoned):
    x = rng.standard_normal(3000).astype(F32)
    x[[5, 2000, 2999]] = [np.inf, np.nan, -np.inf]
    slots = device_exact_slots(dev, x, x.size)
    assert int(slots[:, SLOTS - 1].sum()) == 3
    with pytest.raises(QKGenValueError, match=r"x: 3 of its 3000 values are not finite; allowed: finite"):
        device_exact_mean(dev, x, x.size)


def test_device_buffers_in(dev, rng, poisoned):
    """A buffer an earlier launch wrote (plan.ready, as quantize_stats' absmax) and a native array."""
    x = np.abs(rng.standard_normal(777)).astype(F32)
    buf = dev.as_input(x, "x", ("float32",))
    assert bits(device_exact_mean(dev, ready(buf), x.size)) == bits(exact_mean_f32(x))
    if dev.backend == "opencl":
        cla = pytest.importorskip("pyopencl.array")
        assert bits(device_exact_mean(dev, cla.to_device(dev.queue, x), 700)) == bits(exact_mean_f32(x[:700]))


def test_device_bad_input(dev):
    x = np.ones(10, F32)
    with pytest.raises(QKGenValueError, match=r"n: 11; x holds 10 values; allowed: at most 10"):
        device_exact_mean(dev, x, 11)
    with pytest.raises(QKGenValueError, match=r"n: 0; allowed: an int in 1\.\."):
        device_exact_mean(dev, x, 0)
    with pytest.raises(QKGenValueError, match=r"x: dtype float64; allowed: float32"):
        device_exact_mean(dev, x.astype(np.float64), 10)
