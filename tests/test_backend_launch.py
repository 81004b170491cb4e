"""n-D launches and dynamic local memory on every backend, with a hand-written kernel per backend.

Each kernel writes, for every work-item, its global ids (x + 1000 y + 1000000 z) and a value read
back from work-group local memory (the reversed local id), so a wrong range, a wrong work-group
shape or unshared local memory shows up in some element. Launched 1-, 2- and 3-D on the OpenCL CPU
devices (Intel's runtime and pocl) and SYCL's opencl:cpu; the CUDA case runs on a GPU (marker gpu).
"""

from __future__ import annotations

import numpy as np
import pytest

from qkgen.backends import get, open_device
from qkgen.errors import BuildError, QKGenValueError
from qkgen.kernels.source import Arg, KernelSource

SHAPES = [((24,), (8,)), ((16, 6), (4, 2)), ((8, 6, 4), (2, 3, 2))]
SHAPE_IDS = ["1d", "2d", "3d"]

_OPENCL = """
__kernel void qk_test_nd(__global uint* gids, __global uint* lids, __local uint* scratch, const uint nx,
                         const uint ny) {
    const uint x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    const uint l = (get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0)
                   + get_local_id(0);
    const uint wg = get_local_size(0) * get_local_size(1) * get_local_size(2);
    scratch[l] = l;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint i = (z * ny + y) * nx + x;
    gids[i] = x + 1000u * y + 1000000u * z;
    lids[i] = scratch[wg - 1u - l];
}
"""

_SYCL = """
#include <sycl/sycl.hpp>
namespace syclexp = sycl::ext::oneapi::experimental;
extern "C" SYCL_EXT_ONEAPI_FUNCTION_PROPERTY((syclexp::nd_range_kernel<DIMS>))
void qk_test_nd_DIMS(unsigned* gids, unsigned* lids, syclexp::work_group_memory<unsigned[]> scratch,
                     unsigned nx, unsigned ny) {
    const auto it = sycl::ext::oneapi::this_work_item::get_nd_item<DIMS>();
    unsigned g[3] = {0, 0, 0}, l[3] = {0, 0, 0}, ls[3] = {1, 1, 1};
    for (int d = 0; d < DIMS; ++d) {
        g[d] = it.get_global_id(d);
        l[d] = it.get_local_id(d);
        ls[d] = it.get_local_range(d);
    }
    const unsigned li = (l[2] * ls[1] + l[1]) * ls[0] + l[0];
    const unsigned wg = ls[0] * ls[1] * ls[2];
    scratch[li] = li;
    sycl::group_barrier(it.get_group());
    const unsigned i = (g[2] * ny + g[1]) * nx + g[0];
    gids[i] = g[0] + 1000u * g[1] + 1000000u * g[2];
    lids[i] = scratch[wg - 1u - li];
}
"""

_CUDA = """
extern "C" __global__ void qk_test_nd(unsigned* gids, unsigned* lids, unsigned nx, unsigned ny) {
    extern __shared__ unsigned scratch[];  // dynamic: the launch's local_bytes
    const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    const unsigned l = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const unsigned wg = blockDim.x * blockDim.y * blockDim.z;
    scratch[l] = l;
    __syncthreads();
    const unsigned i = (z * ny + y) * nx + x;
    gids[i] = x + 1000u * y + 1000000u * z;
    lids[i] = scratch[wg - 1u - l];
}
"""


def expected(global_size, local_size):
    g = tuple(global_size) + (1,) * (3 - len(global_size))
    loc = tuple(local_size) + (1,) * (3 - len(local_size))
    z, y, x = np.meshgrid(*(np.arange(n, dtype=np.uint32) for n in g[::-1]), indexing="ij")
    gids = x + 1000 * y + 1000000 * z
    lin = ((z % loc[2]) * loc[1] + (y % loc[1])) * loc[0] + (x % loc[0])
    return gids.ravel(), (int(np.prod(loc)) - 1 - lin).ravel().astype(np.uint32)


def kernel_source(dev, name: str, source: str, dims: int, local_args: bool) -> KernelSource:
    args = [Arg("gids", "out", "u32"), Arg("lids", "out", "u32")]
    if local_args:
        args.append(Arg("scratch", "local", "u32", count=64))
    args += [Arg("nx", "scalar", "u32"), Arg("ny", "scalar", "u32")]
    return KernelSource(op="test", format="-", target=dev.target, name=name, source=source, template="-",
                        params=(), args=tuple(args), wg=1, dims=dims)  # fmt: skip


def run_case(dev, kernel, global_size, local_size, local_arg=None, local_bytes=0):
    n = int(np.prod(global_size))
    gbuf, garr = dev.empty(n, "u32", poison=True)
    lbuf, larr = dev.empty(n, "u32", poison=True)
    wg = int(np.prod(local_size))
    args = [gbuf, lbuf] + ([local_arg(wg)] if local_arg else [])
    gs = tuple(global_size) + (1,) * (3 - len(global_size))
    args += [np.uint32(gs[0]), np.uint32(gs[1])]
    one_d = len(global_size) == 1
    dev.launch(kernel, args, global_size[0] if one_d else global_size, local_size[0] if one_d else local_size,
               local_bytes=local_bytes)  # fmt: skip
    want_g, want_l = expected(global_size, local_size)
    np.testing.assert_array_equal(dev.download(garr, "u32", n), want_g)
    np.testing.assert_array_equal(dev.download(larr, "u32", n), want_l)


def _compile_or_skip(dev, ks):
    try:
        return dev.compile(ks)
    except BuildError as e:
        if "unknown target CPU" in e.log:  # pocl's LLVM does not know this host's CPU
            why = next(line for line in e.log.splitlines() if "unknown target CPU" in line)
            pytest.skip(f"{dev.info.name} cannot compile any OpenCL C on this host ({why.strip()})")
        raise


opencl = get("opencl")
OPENCL_DEVICES = [d.index for d in opencl.devices()] if opencl.is_available() else []
sycl = get("sycl")


@pytest.mark.skipif(not OPENCL_DEVICES, reason=f"OpenCL: {opencl.why_unavailable()}")
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("index", OPENCL_DEVICES)
def test_opencl_nd_launch_with_local_memory(index, shape):
    dev = open_device("opencl", index)
    kernel = _compile_or_skip(dev, kernel_source(dev, "qk_test_nd", _OPENCL, len(shape[0]), True))
    run_case(dev, kernel, *shape, local_arg=lambda wg: dev.local_arg("u32", wg))


@pytest.mark.skipif(not sycl.is_available(), reason=f"SYCL: {sycl.why_unavailable()}")
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_sycl_nd_launch_with_local_memory(shape):
    dev = open_device("sycl", "cpu")
    dims = len(shape[0])
    source = _SYCL.replace("DIMS", str(dims))
    kernel = dev.compile(kernel_source(dev, f"qk_test_nd_{dims}", source, dims, True))
    run_case(dev, kernel, *shape, local_arg=lambda wg: dev.local_arg("u32", wg))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_cuda_nd_launch_with_dynamic_shared_memory(shape):
    cuda = get("cuda")
    if not cuda.is_available():
        pytest.skip(f"CUDA: {cuda.why_unavailable()}")
    dev = open_device("cuda", 0)
    kernel = dev.compile(kernel_source(dev, "qk_test_nd", _CUDA, len(shape[0]), False))
    run_case(dev, kernel, *shape, local_bytes=4 * int(np.prod(shape[1])))


@pytest.mark.skipif(not OPENCL_DEVICES, reason=f"OpenCL: {opencl.why_unavailable()}")
@pytest.mark.parametrize(
    "global_size, local_size, message",
    [
        ((16, 4), 4, "the same number"),
        ((16, 6), (4, 4), "not a multiple"),
        ((1, 1, 1, 1), (1, 1, 1, 1), "1 to 3"),
        (0, 1, "positive"),
        ((8.0,), (4,), "positive int"),
    ],
)
def test_bad_launch_geometry_is_refused_before_any_launch(global_size, local_size, message):
    dev = open_device("opencl", 0)
    with pytest.raises(QKGenValueError, match=message):
        dev.launch(None, [], global_size, local_size)
