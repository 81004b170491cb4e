"""Intel GPU machine code without an Intel GPU (issue 14): every OpenCL kernel for the Intel GPU
profiles (sub-group 16 and 32) and the SPIR-V of every SYCL kernel compiled with Intel's offline
compiler ocloc for dg2 (Arc A), pvc (Data Center Max) and tgllp (Iris Xe).

`make test` unpacks Debian's intel-opencl-icd into .venv/intel-gpu (qkgen.tools.aot fetch); where
that is impossible the tier skips and says why. Results are cached in the qkgen cache; the report
(SIMD widths, spills, stack calls, private memory) goes to <cache>/aot/report-*.txt.

One ocloc build costs about a second here and there are over a thousand OpenCL sources, so make test
compiles one of the sources that differ only in the activation dtype (f32, f16, bf16 taking turns)
and each source it keeps (SYCL: each SPIR-V module) for one of the three devices, turning through
them within an op, format and profile (tests/matrix.py); make test-full compiles everything for
every device. Each device's OpenCL share is its own class, a work unit of its own for pytest-xdist
(--dist loadscope), so the shares are dealt to both workers; all are marked early (tests/conftest.py).
"""

import os
import warnings

import pytest

from qkgen.cache import cache_dir
from qkgen.kernels.target import PROFILES
from qkgen.tools import aot

from .matrix import FULL, one_per_group, spread

DEVICES = tuple(aot.DEVICES)
JOBS = 2


@pytest.fixture(scope="module")
def ocloc():
    tool, why = aot.find_ocloc()
    if tool is None:
        pytest.skip(why)
    return tool


def _check(results, what: str):
    text = aot.report(results)
    path = cache_dir("aot") / f"report-{what}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    print(text)
    problems = [p for r in results for p in r.problems()]
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems[:40]) + f"\n\nreport: {path}"
    spilled = [(r.device, n) for r in results for n, k in r.kernels.items() if k.get("spill")]
    if spilled:
        warnings.warn(f"{what}: {len(spilled)} kernel(s) spill registers (report: {path}): {spilled[:8]}")


def test_profiles_use_supported_subgroup_sizes():
    for t in (*aot.opencl_profiles(), *(PROFILES[n] for n in aot.SYCL_PROFILES)):
        for dev, sizes in aot.DEVICES.items():
            assert t.subgroup_size in sizes, (t.name, dev)


def _all_but_dtype(u) -> tuple:
    """A unit's op, format, profile and render parameters but the activation dtype."""
    params = tuple(sorted((k, str(v)) for k, v in u["params"].items() if k != "dtype"))
    return u["op"], u["format"], u["target"].name, params


@pytest.fixture(scope="module")
def opencl_share():
    """(unit, device) pairs: each OpenCL source with the device it is compiled for."""
    units = aot.opencl_units()
    assert len(units) >= 240, len(units)
    units = one_per_group(units, _all_but_dtype)
    # by profile too: each sub-group size of an op and format meets each device (the sub-group-32
    # int8 dot downgrade below shows on dg2 and tgllp only)
    return spread(units, DEVICES, group=lambda u: (u["op"], u["format"], u["target"].name))


@pytest.mark.early  # minutes each: started before the many short tests (tests/conftest.py)
class _OpenCLOnDevice:
    device = ""

    def test_opencl_kernels_compile(self, ocloc, opencl_share):
        units = [u for u, d in opencl_share if d == self.device]
        results = aot.compile_units(ocloc, units, self.device, JOBS)
        # IGC 1.0.12504 makes dot_4x8packed_*_int a stack call and drops such kernels to SIMD16 on dg2
        # and tgllp: the sub-group-32 profile renders the portable dot instead, and any downgrade fails.
        _check(results, f"opencl-{self.device}")


class TestOpenCLOnDg2(_OpenCLOnDevice):
    device = "dg2"


class TestOpenCLOnPvc(_OpenCLOnDevice):
    device = "pvc"


class TestOpenCLOnTgllp(_OpenCLOnDevice):
    device = "tgllp"


@pytest.mark.parametrize("device", ("dg2", "pvc"))
def test_float_gemv_keeps_its_arrays_in_registers(ocloc, device):
    """The float GEMV, the path every call on an Intel GPU takes, at the sub-group-16 profile's
    defaults (Target.registers: 1 row a lane group and chunks of 8 at M > 1): every row, M = 1 and
    M = 8, f32 x (the most registers), built for Arc (dg2) and Data Center Max (pvc) with nothing
    kept in memory: no private arrays, no spills. At 4 rows of 16-32 elements every M = 8 kernel
    kept 552-944 bytes a work-item in memory on dg2."""
    t = PROFILES["opencl-intel-gpu"]
    units = aot.opencl_units(targets=[t], only=lambda v: v["op"] == "gemv" and v.get("dtype") == "f32")
    assert {u["params"]["mmax"] for u in units} == {1, 8} and len(units) >= 50, len(units)
    results = aot.compile_units(ocloc, units, device, JOBS)
    _check(results, f"gemv-{device}")
    held = [(n, k.get("spill", 0), k["mem"]) for r in results for n, k in r.kernels.items() if k.get("spill") or k["mem"]]
    assert not held, held


def test_every_device_has_an_opencl_class():
    assert sorted(c.device for c in _OpenCLOnDevice.__subclasses__()) == sorted(DEVICES)


@pytest.fixture(scope="module")
def sycl_share():
    """(module, device) pairs: each SPIR-V module of the SYCL kernels with the device it is compiled for."""
    try:
        units = aot.sycl_units(jobs=JOBS)
    except Exception as e:  # no intel-sycl-rt, no C++ compiler, no device that builds SYCL source
        pytest.skip(f"no SPIR-V from DPC++'s run-time compiler: {type(e).__name__}: {str(e)[:500]}")
    return spread(units, DEVICES, group=lambda u: u["target"].name)


@pytest.mark.early
@pytest.mark.parametrize("device", DEVICES)
def test_sycl_spirv_compiles(ocloc, sycl_share, device):
    results = aot.compile_units(ocloc, [u for u, d in sycl_share if d == device], device, JOBS)
    _check(results, f"sycl-{device}")
    assert sum(len(r.kernels) for r in results) >= (240 if FULL else 240 // len(DEVICES))


def test_unsupported_subgroup_size_fails(ocloc):
    """A kernel that requires sub-group 8 is refused for pvc (Xe-HPC has 16 and 32 only)."""
    src = ("__kernel __attribute__((intel_reqd_sub_group_size(8))) void k(__global float* y)"
           " { y[get_global_id(0)] = sub_group_reduce_add(y[get_global_id(0)]); }\n")  # fmt: skip
    target = aot.opencl_profiles()[0]
    u = {"label": "k.cl", "source": src, "profiles": ["test"], "target": target, "uses_sg": ("k",)}
    (pvc,) = aot.compile_units(ocloc, [u], "pvc", 1)
    assert not pvc.ok and pvc.problems(), pvc
    (dg2,) = aot.compile_units(ocloc, [u], "dg2", 1)
    assert dg2.ok and dg2.kernels["k"]["simd"] == 8
    assert any("rendered for 16" in p for p in dg2.problems())  # required 8, rendered for 16


def test_spills_are_reported(ocloc):
    """A kernel too big for its registers: IGC's spill line and the zebin's scratch are read."""
    src = ("__kernel __attribute__((intel_reqd_sub_group_size(32))) void s(__global float* o,"
           " __global const float* x, uint n) { float a[512]; uint g = get_global_id(0);"
           " for (int i = 0; i < 512; ++i) a[i] = x[g * 512 + i] * x[(g + i) % n]; float s = 0;"
           " _Pragma(\"unroll\") for (int j = 0; j < 512; ++j) s += a[j] * a[(j * 7 + 3) & 511];"
           " for (int i = 0; i < 512; ++i) o[g * 512 + i] = a[i] * s; }\n")  # fmt: skip
    target = aot.opencl_profiles()[1]
    u = {"label": "s.cl", "source": src, "profiles": ["test"], "target": target, "uses_sg": ()}
    (r,) = aot.compile_units(ocloc, [u], "dg2", 1)
    k = r.kernels["s"]
    assert r.ok and k["simd"] == 32 and k["spill"] > 0 and k["mem"].get("spill_fill_space", 0) > 0, (k, r.log)
    assert "spilled" in aot.report([r])


def test_gpu_driver_stays_out_of_the_opencl_loader(ocloc):
    """The unpacked GPU driver is never registered: qkgen's vendors folder names no libigdrcl, and
    nothing here set LD_LIBRARY_PATH for this process."""
    from qkgen.backends import icd

    icd.register_runtimes()
    folder = os.environ.get("OCL_ICD_VENDORS", "")
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        with open(os.path.join(folder, name), errors="replace") as f:
            assert "libigdrcl" not in f.read(), name
    assert str(ocloc.libdir or "/nonexistent") not in os.environ.get("LD_LIBRARY_PATH", "")


def test_syclbin_reader():
    import struct

    spv = struct.pack("<5I", 0x07230203, 0x10400, 0, 1, 0)
    meta = b"[SYCLBIN/ir module metadata]\ntype=1|0\n"
    head = struct.pack("<5I4x4Q", 0x53594249, 1, 1, 1, 0, len(meta), len(spv), 0, 0)
    absmod = struct.pack("<2Q4I", 0, 0, 1, 0, 0, 0)
    irmod = struct.pack("<4Q", 0, len(meta), 0, len(spv))
    blob = b"wrapper!" + head + absmod + irmod + meta + b"\0" * (-len(meta) % 8) + spv
    assert aot.syclbin_ir_modules(blob) == [(0, spv)]


@pytest.mark.parametrize("device", DEVICES)
def test_pairs_kernels_compile(ocloc, device):
    """The M = 1 GEMV by byte pairs (f16 pair arithmetic, a 256-entry table with a copy a lane) for
    the Intel GPU profiles, nf4 nested and int4 row, at the op's defaults and with 4 rows a lane
    group in teams of 2: each builds at the profile's sub-group size, without spills or stack calls
    (outside the catalog, which lists each op's defaults only)."""
    from qkgen.kernels.render import render

    units = []
    for t in aot.opencl_profiles():
        for name, kw in (("nf4", {"blocksize": 64, "nested": True}), ("int4", {"scale_mode": "row"})):
            for knobs in ({}, {"rpw": 4, "slices": 2, "wg": 256}):
                ks = render("gemv", name, t, dtype="f16", mmax=1, pairs=True, **kw, **knobs)
                units.append({"label": ks.filename, "source": ks.source, "profiles": [t.name], "target": t,
                              "uses_sg": (ks.name,) if "sub_group" in ks.source else ()})  # fmt: skip
    results = aot.compile_units(ocloc, units, device, JOBS)
    _check(results, f"pairs-{device}")
    assert all(r.ok for r in results) and len(results) == len(units)
