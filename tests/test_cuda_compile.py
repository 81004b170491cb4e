"""Every generated CUDA kernel compiles with nvcc for sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120
(Ampere to Blackwell data-center parts and the RTX 50 series), with no warning about the generated
file. Needs nvcc only, no GPU (this runs in CI); architectures this nvcc cannot build are left out
and named by test_matrix_covers_blackwell.

The kernels are qkgen.tools.catalog.variants(op) for every op in the registry (format x dtype x
statistics layout), each also at its format's smallest block size. A new op is
picked up as soon as the catalog enumerates it. One nvcc call builds a batch of kernels (one
translation unit: each kernel's source in a namespace, under a #line naming its own file, so a
message names the kernel's file and line) for every architecture (a fatbin) from one front end,
compute_80's PTX, with ptxas for each architecture: the source is the same for all of them (one
profile). Both cut the matrix's time by about 3x each on a 2-core machine. test_native_front_ends
builds one kernel of every op alone, with each architecture's own front end, where CUDA's headers
take their newer paths. Two calls run at a time.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from qkgen import formats as F
from qkgen.backends.base import bundle_source
from qkgen.backends.cuda_toolchain import NVCC_FLAGS, find_nvcc, nvcc_arches, nvcc_build, nvcc_compile
from qkgen.errors import BuildError
from qkgen.kernels.ops import OPS
from qkgen.kernels.render import render
from qkgen.kernels.target import PROFILES
from qkgen.tools import catalog

WANTED = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
ARCHES = tuple(a for a in WANTED if a in nvcc_arches()) if find_nvcc() else ()
# Every one of WANTED has the same capabilities (fp16, bf16, 32-lane warps, dp4a), so one source
# per kernel, rendered for the sm_80 profile, is built for all of them; but for grid_dependency
# (sm_90 on), which only the kernels of a call's chain of launches read: test_chain_kernels_on_sm90.
TARGET = PROFILES["cuda-sm80"]


def _caps_but_grid_dependency(t) -> dict:
    return {k: v for k, v in t.caps().items() if k != "grid_dependency"}


assert all(_caps_but_grid_dependency(PROFILES[f"cuda-sm{a[3:]}"]) == _caps_but_grid_dependency(TARGET) for a in WANTED)

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


BATCH = 24  # kernels a translation unit: CUDA's headers are parsed once for all of them


def build_batch(kss, arches, ptx_arch=None) -> list:
    """Each kernel's NvccOutput: the batch's binary and log. A batch nvcc refuses is built kernel by
    kernel, so that the BuildError names the kernel and carries its own source."""
    try:
        # each kernel under a #line naming its own file: messages read "<name>.cu(line)" as for it alone
        out = nvcc_build(bundle_source(kss, ".cu"), arches, NVCC_FLAGS, name="qk_batch", ptx_arch=ptx_arch)
    except BuildError:
        return [nvcc_build(ks.source, arches, NVCC_FLAGS, name=ks.name, ptx_arch=ptx_arch) for ks in kss]
    return [out] * len(kss)


def _render(kw: dict):
    kw = dict(kw)
    return render(kw.pop("op"), kw.pop("format"), TARGET, **kw)


def _batches(kss: list, size: int = BATCH) -> list[list]:
    """Kernels of the same name once (two variants may render the same kernel), in runs of `size`."""
    unique = list({ks.name: ks for ks in kss}.values())
    return [unique[i : i + size] for i in range(0, len(unique), size)]


@pytest.fixture(scope="module")
def builds(request):
    """(KernelSource, future of its NvccOutput) of the selected kernels, built in batches on two threads."""
    mine = [it for it in request.session.items if it.module is request.module and hasattr(it, "callspec")]
    selected = {item.callspec.id: _render(item.callspec.params["kw"]) for item in mine if "kw" in item.callspec.params}
    pool = ThreadPoolExecutor(max_workers=2)
    futures = {}
    for batch in _batches(list(selected.values())):
        job = pool.submit(build_batch, batch, ARCHES, ARCHES[0])
        futures.update({ks.name: (job, i) for i, ks in enumerate(batch)})
    yield {vid: (ks, futures[ks.name]) for vid, ks in selected.items()}
    pool.shutdown(wait=True, cancel_futures=True)


def generated_warnings(log: str, name: str) -> list[str]:
    """nvcc's and ptxas' warnings about the generated kernel `name` (the file name.cu or the entry
    point itself, not a longer name it begins), each once (nvcc repeats them per architecture); CUDA's
    own headers are not ours."""
    warning = re.compile(r"\bwarning\b", re.IGNORECASE)
    ours = re.compile(re.escape(name) + r"(?![A-Za-z0-9_])")
    return list(dict.fromkeys(line for line in log.splitlines() if ours.search(line) and warning.search(line)))


def assert_build_without_warnings(kss, arch: str = "sm_90") -> None:
    """Build the KernelSources for `arch` (batches, two at a time) and assert a binary and none of
    generated_warnings: for knob variants outside the catalog's matrix."""
    batches = _batches(kss)
    with ThreadPoolExecutor(2) as pool:
        built = list(pool.map(lambda b: build_batch(b, (arch,)), batches))
    outs = {ks.name: out for batch, res in zip(batches, built) for ks, out in zip(batch, res)}
    for ks in kss:
        assert outs[ks.name].binary, ks.name
        assert not generated_warnings(outs[ks.name].log, ks.name), f"{ks.name}:\n{outs[ks.name].log}"


@pytest.mark.parametrize("kw", VARIANTS)
def test_compiles_without_warnings(kw, builds, request):
    ks, (job, i) = builds[request.node.callspec.id]
    out = job.result()[i]  # a BuildError carries nvcc's log and the kernel's source
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
    ks = _render(variants(op)[0])
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


def test_a_batch_names_each_kernel_in_its_messages():
    quiet = 'extern "C" __global__ void qk_quiet(float* out) { out[0] = 0.0f; }\n'
    loud = 'extern "C" __global__ void qk_quiet_loud(float* out) {\n  int unused = 1; out[0] = 0.0f; }\n'
    kss = [SimpleNamespace(name="qk_quiet", source=quiet), SimpleNamespace(name="qk_quiet_loud", source=loud)]
    a, b = build_batch(kss, ["sm_80"])
    assert a is b and a.binary
    assert not generated_warnings(a.log, "qk_quiet"), a.log  # a longer name that begins with it is not it
    assert any(w.startswith("qk_quiet_loud.cu(2)") for w in generated_warnings(a.log, "qk_quiet_loud")), a.log


def test_a_batch_nvcc_refuses_is_built_kernel_by_kernel():
    good = SimpleNamespace(name="qk_good", source='extern "C" __global__ void qk_good(float* o) { o[0] = 1.0f; }\n')
    bad = SimpleNamespace(name="qk_bad", source='extern "C" __global__ void qk_bad(float* o) { o[0] = nope; }\n')
    with pytest.raises(BuildError) as e:
        build_batch([good, bad], ["sm_80"])
    assert e.value.source == bad.source and "nope" in e.value.log


def test_warnings_are_seen():
    src = 'extern "C" __global__ void qk_warns(float* out) { int unused = 1; out[0] = 0.0f; }\n'
    out = nvcc_build(src, ["sm_80"], NVCC_FLAGS, name="qk_warns")
    assert generated_warnings(out.log, "qk_warns"), out.log


def test_chain_kernels_on_sm90():
    """The kernels of a call's chain of launches (OpSpec.grid_role) as sm_90 on renders them, with
    their in-kernel wait and early requests of W (target.grid_dependency): one of every format each
    takes, f16 x, and gemv_mma's x_rounded form, built for sm_90 without a warning about them."""
    if "sm_90" not in ARCHES:
        pytest.skip(f"{find_nvcc()} cannot build sm_90")
    sm90 = PROFILES["cuda-sm90"]
    kss = [render(op, f, sm90, dtype="f32" if op == "round_to_f16" else "f16")
           for op, spec in OPS.items() if spec.grid_role for f in spec.formats()[: 1 if spec.format_free else None]]
    kss += [render("gemv_mma", f, sm90, dtype="f32", x_rounded=True, **kw)
            for f, kw in (("nf4", {"nested": True}), ("int4", {"scale_mode": "row"}), ("blockwise8", {}))]
    assert sum("griddepcontrol.wait;" in ks.source for ks in kss) == len(kss) - 2  # all but the two that let the next start
    assert_build_without_warnings(kss, "sm_90")
