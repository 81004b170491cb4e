"""Every generated CUDA kernel compiles with nvcc for sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120
(Ampere to Blackwell data-center parts and the RTX 50 series), with no warning about the generated
file. Needs nvcc only, no GPU (this runs in CI); architectures this nvcc cannot build are left out
and named by test_matrix_covers_blackwell.

The kernels are qkgen.tools.catalog.variants(op) for every op in the registry (format x dtype x
statistics layout), each also at its format's smallest block size. A new op is
picked up as soon as the catalog enumerates it. One nvcc call per kernel builds every
architecture (a fatbin) from one front end, compute_80's PTX, with ptxas for each architecture: the
source is the same for all of them (one profile), and this is a quarter of the time of a front end
each. test_native_front_ends builds one kernel of every op with each architecture's own front end,
where CUDA's headers take their newer paths. Two calls run at a time.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from qkgen import formats as F
from qkgen.backends.cuda_toolchain import NVCC_FLAGS, find_nvcc, nvcc_arches, nvcc_build, nvcc_compile
from qkgen.errors import BuildError
from qkgen.kernels.ops import OPS
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.tools import catalog

WANTED = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
ARCHES = tuple(a for a in WANTED if a in nvcc_arches()) if find_nvcc() else ()
# Every one of WANTED has the same capabilities (fp16, bf16, 32-lane warps, dp4a), so one source
# per kernel, rendered for the sm_80 profile, is built for all of them.
TARGET = PROFILES["cuda-sm80"]
assert all(PROFILES[f"cuda-sm{a[3:]}"].caps() == TARGET.caps() for a in WANTED)

pytestmark = pytest.mark.skipif(
    find_nvcc() is None, reason="nvcc not found (set CUDA_HOME or put it on PATH)"
)


def variants(op: str) -> list[dict]:
    """render() keyword arguments of every kernel to compile for `op`: the catalog's variants, and
    each again at the smallest block size where the format has several (the narrowest chunks)."""
    out: dict[str, dict] = {}
    for v in catalog.variants(op):
        fmt = F.get(v["format"])
        sizes = [v.get("blocksize")]
        row_free = OPS[op].format_free  # an op that reads no row takes no block size
        if len(fmt.blocksizes) > 1 and not row_free and (fmt.family != "int" or v.get("scale_mode") == "group"):
            sizes.append(fmt.blocksizes[0])
        for bs in sizes:
            kw = {**v, "blocksize": bs}
            out.setdefault(_variant_id(kw), kw)
    return list(out.values())


def _variant_id(kw: dict) -> str:
    parts = [kw["op"], kw["format"]]
    if kw.get("nested"):
        parts.append("nested")
    if kw.get("scale_mode"):
        parts.append(kw["scale_mode"])
    if kw.get("blocksize") and (kw.get("scale_mode") in (None, "group")):
        parts.append(f"bs{kw['blocksize']}")
    parts.append(kw["dtype"])
    parts += [f"{k}{v}" for k, v in sorted(kw.items()) if k not in ("op", "format", "nested", "scale_mode",
                                                                     "blocksize", "dtype")]  # fmt: skip
    return "-".join(parts)


VARIANTS = [pytest.param(kw, id=_variant_id(kw)) for op in OPS for kw in variants(op)]


def _compile(kw: dict):
    kw = dict(kw)
    ks = render(kw.pop("op"), kw.pop("format"), TARGET, **kw)
    return ks, nvcc_build(ks.source, ARCHES, NVCC_FLAGS, name=ks.name, ptx_arch=ARCHES[0])


@pytest.fixture(scope="module")
def builds(request):
    """Futures of the selected kernels' builds, all started at once on two threads."""
    mine = [it for it in request.session.items if it.module is request.module and hasattr(it, "callspec")]
    selected = {item.callspec.id: item.callspec.params["kw"] for item in mine if "kw" in item.callspec.params}
    pool = ThreadPoolExecutor(max_workers=2)
    yield {vid: pool.submit(_compile, kw) for vid, kw in selected.items()}
    pool.shutdown(wait=True, cancel_futures=True)


def generated_warnings(log: str, name: str) -> list[str]:
    """nvcc's and ptxas' warnings about the generated kernel `name` (the file name.cu or the entry
    point itself), each once (nvcc repeats them per architecture); CUDA's own headers are not ours."""
    warning = re.compile(r"\bwarning\b", re.IGNORECASE)
    return list(dict.fromkeys(line for line in log.splitlines() if name in line and warning.search(line)))


def assert_build_without_warnings(kss, arch: str = "sm_90") -> None:
    """Build each KernelSource for `arch` (two at a time) and assert a binary and none of
    generated_warnings: for knob variants outside the catalog's matrix."""

    def build(ks):
        return nvcc_build(ks.source, (arch,), NVCC_FLAGS, name=ks.name)

    with ThreadPoolExecutor(2) as pool:
        outs = list(pool.map(build, kss))
    for ks, out in zip(kss, outs):
        assert out.binary, ks.name
        assert not generated_warnings(out.log, ks.name), f"{ks.name}:\n{out.log}"


@pytest.mark.parametrize("kw", VARIANTS)
def test_compiles_without_warnings(kw, builds, request):
    ks, out = builds[request.node.callspec.id].result()  # a BuildError carries nvcc's log and the source
    assert out.binary, ks.name
    bad = generated_warnings(out.log, ks.name)
    if bad:
        lines = ks.source.splitlines()
        where = [f"{w}\n    {lines[int(m.group(1)) - 1].strip()}" for w in bad
                 if (m := re.match(r"[^(]*\((\d+)\)", w))]  # fmt: skip
        pytest.fail(f"nvcc warns about {ks.filename}:\n" + "\n".join(where or bad))


@pytest.mark.parametrize("op", list(OPS))
def test_native_front_ends(op):
    """The op's first kernel with a front end per architecture (compute_XX for sm_XX), as a user's
    fatbin is built: CUDA's headers differ by __CUDA_ARCH__, the matrix above sees only compute_80."""
    kw = dict(variants(op)[0])
    ks = render(kw.pop("op"), kw.pop("format"), TARGET, **kw)
    out = nvcc_build(ks.source, ARCHES, NVCC_FLAGS, name=ks.name)
    assert out.binary, ks.name
    assert not generated_warnings(out.log, ks.name), f"{ks.name}:\n{out.log}"


def test_every_op_has_variants():
    for op in OPS:
        assert variants(op), f"catalog.variants({op!r}) enumerates no kernel"


def test_cubin_for_one_arch():
    ks = render("dequantize", "nf4", TARGET, dtype="bf16")
    cubin = nvcc_compile(ks.source, "sm_90", NVCC_FLAGS, name=ks.name)
    assert cubin[:4] == b"\x7fELF"


def test_matrix_covers_blackwell():
    missing = [a for a in WANTED if a not in ARCHES]
    assert not missing, f"{find_nvcc()} ({', '.join(nvcc_arches())}) cannot build {missing}; CUDA 12.8+ can"


def test_build_error_carries_log_and_source():
    src = 'extern "C" __global__ void broken(float* out) { out[0] = undeclared; }\n'
    with pytest.raises(BuildError) as e:
        nvcc_compile(src, "sm_80", NVCC_FLAGS, name="broken")
    assert "undeclared" in e.value.log and e.value.source == src
    assert "    1  extern" in str(e.value)


def test_warnings_are_seen():
    src = 'extern "C" __global__ void qk_warns(float* out) { int unused = 1; out[0] = 0.0f; }\n'
    out = nvcc_build(src, ["sm_80"], NVCC_FLAGS, name="qk_warns")
    assert generated_warnings(out.log, "qk_warns"), out.log
