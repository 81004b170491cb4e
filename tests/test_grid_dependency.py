"""Programmatic dependent launch (target.grid_dependency, CUDA sm_90 on): in a call's chain of
launches the kernel that reads x's copy (q8_1 or f16) waits in-kernel for the launch before it,
which lets it start early; nothing else changes, and no other target gets either statement."""

import pytest

from qkgen.errors import QKGenValueError
from qkgen.kernels.ops import OPS
from qkgen.kernels.render import render
from qkgen.kernels.target import Target, get_target

WAIT, RELEASE = "griddepcontrol.wait;", "griddepcontrol.launch_dependents;"
CHAIN = [("quantize_q8_1", "q8_1", {}, RELEASE), ("round_to_f16", None, {}, RELEASE),
         ("gemv_int8dot", "q4_0", {"mmax": 1}, WAIT), ("gemv_int8mma", "q4_1", {}, WAIT),
         ("gemv_int8frag", "q4_0", {}, WAIT), ("gemv_int8mma_sub", "q4_k", {}, WAIT),
         ("gemv_int8frag_sub", "q6_k", {}, WAIT), ("gemv_mma", "nf4", {"x_rounded": True}, WAIT)]  # fmt: skip


@pytest.mark.parametrize("op, fmt, kw, stmt", CHAIN)
def test_chain_kernels_wait_or_release_on_sm90_only(op, fmt, kw, stmt):
    ks = render(op, fmt, "cuda-sm90", dtype="f32", **kw)
    assert ks.source.count(stmt) == 1 and ks.grid_wait == (stmt == WAIT)
    assert ("grid_wait=1" if stmt == WAIT else "grid_release=1") in ks.source.split("*/")[0]
    for other in ("cuda-sm80", "opencl-nvidia-sm90", "opencl-intel-gpu", "sycl-intel-gpu"):
        try:
            ks = render(op, fmt, other, dtype="f32", **kw)
        except QKGenValueError:  # a kernel that target does not take (no warp matrix products)
            continue
        assert "griddepcontrol" not in ks.source and not ks.grid_wait, other


def test_single_launch_kernels_neither_wait_nor_release():
    for op, fmt, kw in (("gemv", "q4_0", {"mmax": 1}), ("gemv_mma", "nf4", {}), ("dequantize", "q4_0", {}),
                        ("gemv_mma", "q4_0", {"dtype": "f16"})):  # fmt: skip
        ks = render(op, fmt, "cuda-sm90", **{"dtype": "f32", **kw})
        assert "griddepcontrol" not in ks.source and not ks.grid_wait, op
    roles = {name: spec.grid_role for name, spec in OPS.items() if spec.grid_role}
    assert roles == {"quantize_q8_1": "feeds_next", "round_to_f16": "feeds_next", "gemv_int8dot": "reads_prior",
                     "gemv_int8mma": "reads_prior", "gemv_int8frag": "reads_prior",
                     "gemv_int8mma_sub": "reads_prior", "gemv_int8frag_sub": "reads_prior"}  # fmt: skip


def test_the_capability_is_cudas_from_sm90():
    assert [get_target(f"cuda-sm{sm}").grid_dependency for sm in (80, 86, 89, 90, 100, 120)] == [False] * 3 + [True] * 3
    assert "grid_dependency=1" in get_target("cuda-sm90").describe()
    assert "grid_dependency" not in get_target("cuda-sm80").describe()
    with pytest.raises(QKGenValueError, match="target.grid_dependency: only for CUDA targets"):
        Target("x", "opencl", "OpenCL C 3.0", fp16=True, bf16=False, subgroup_size=16, grid_dependency=True)


def test_launch_configuration_matches_cuda_h():
    """cuLaunchKernelEx's CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out (64-bit)."""
    import ctypes

    from qkgen.backends import cuda_driver as cd

    assert ctypes.sizeof(cd._Attr) == 72 and cd._Attr.value.offset == 8
    assert cd._LaunchConfig.stream.offset == 32 and cd._LaunchConfig.nattrs.offset == 48
    cfg, attr = cd._programmatic_config((3, 1, 1), (128, 1, 1), 0)
    assert list(cfg.grid) == [3, 1, 1] and cfg.attrs.contents.id == 6 and cfg.attrs.contents.value.flag == 1


@pytest.mark.parametrize("cc", [(8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)])
def test_a_cuda_devices_target_has_its_profiles_capabilities(cc):
    """A GPU's own target (what public calls render for) and the profile of its arch agree on every
    capability: a capability set on the profiles alone would render kernels no device runs."""
    pytest.importorskip("ctypes")
    from qkgen.backends.cuda import device_target

    own, profile = device_target(*cc), get_target("cuda-sm%d%d" % cc)
    assert own.caps() == profile.caps() and own.arch == profile.arch and own.grid_dependency == (cc >= (9, 0))
