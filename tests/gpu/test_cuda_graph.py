"""qkgen.gemv and qkgen.dequantize captured in a CUDA graph (issue 11): with torch tensors they
launch on torch's current stream, which inside torch.cuda.graph is the capture stream, so the graph
holds them; a replay on new x written into the captured input must give what an eager call gives.
A launch on any other stream would fail the capture, and one left out of the graph would leave the
NaN the outputs are filled with before each replay."""

from __future__ import annotations

import numpy as np
import pytest

import qkgen
from qkgen.formats import reference

pytestmark = pytest.mark.gpu
K, N = 512, 256


def _on_cuda(torch, qt):
    return qt.with_arrays(**{k: torch.from_numpy(np.ascontiguousarray(v)).cuda()
                             for k, v in qt.arrays().items()})  # fmt: skip


@pytest.mark.parametrize("fmt, opts, path", [("q4_0", {}, "float"), ("q4_0", {}, "int8dot"),
                                             ("nf4", {"nested": True}, "float")])  # fmt: skip
@pytest.mark.parametrize("m", [1, 3])
def test_gemv_and_dequantize_replay_in_a_cuda_graph(torch_cuda, fmt, opts, path, m):
    torch = torch_cuda
    w = np.random.default_rng(0).standard_normal((N, K)).astype(np.float32)
    qt = _on_cuda(torch, reference.quantize(w, fmt, **opts))
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture: compiles and binds
        qkgen.gemv(qt, x, path=path)
        qkgen.dequantize(qt, "bf16")
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = qkgen.gemv(qt, x, path=path)
        d = qkgen.dequantize(qt, "bf16")
    assert y.shape == (m, N) and d.shape == (N, K)
    for _ in range(3):
        x.copy_(torch.randn(m, K, device="cuda", dtype=torch.bfloat16))
        y.fill_(float("nan"))
        d.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want_y, want_d = qkgen.gemv(qt, x, path=path), qkgen.dequantize(qt, "bf16")
        torch.cuda.synchronize()
        assert torch.equal(y, want_y), (y - want_y).abs().max()
        assert torch.equal(d, want_d)
    assert not torch.isnan(y).any() and torch.isfinite(y).all()


def test_gemv_follows_torch_current_stream(torch_cuda):
    """On a side stream a warm call still launches there: it is ordered after the side stream's
    write of x, before anything on the default stream has waited on it."""
    torch = torch_cuda
    w = np.random.default_rng(1).standard_normal((N, K)).astype(np.float32)
    qt = _on_cuda(torch, reference.quantize(w, "q8_0"))
    x = torch.randn(1, K, device="cuda", dtype=torch.float16)
    want = qkgen.gemv(qt, x)  # binds on the default stream
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000)  # holds the side stream: an early launch would read the old x
        x2 = x * 2
        y = qkgen.gemv(qt, x2)
    side.synchronize()
    twice = qkgen.gemv(qt, x * 2)
    torch.cuda.synchronize()
    assert torch.equal(y, twice) and not torch.equal(y, want)


def test_two_launch_calls_keep_one_scratch_per_stream(torch_cuda, monkeypatch):
    """The q8_1 copy of x that the int8dot and int8mma paths make (runtime.plan.Bound.scratch) is
    made once per stream and reused by later calls there: calls on two streams that overlap, and
    two threads on one stream, still get their own x's product bit for bit; a graph captured after
    them keeps a buffer of its own and replays right."""
    import threading

    from qkgen.runtime import plan

    monkeypatch.setattr(plan, "POISON_OUTPUTS", False)  # poisoned calls take a fresh scratch each time
    torch = torch_cuda
    w = np.random.default_rng(2).standard_normal((N, K)).astype(np.float32)
    qt = _on_cuda(torch, reference.quantize(w, "q4_0"))
    for m, path in ((1, "int8dot"), (3, "int8mma")):
        xs = [torch.randn(m, K, device="cuda", dtype=torch.float32) for _ in range(6)]
        want = [qkgen.gemv(qt, x, path=path).clone() for x in xs]  # the first call binds; the rest keep a scratch
        bound = next(b for k, b in qt._qkgen_calls.items() if xs[0].shape in k)
        assert list(bound.scratch) == [torch._C._cuda_getCurrentRawStream(0)]
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        got = [[None] * len(xs) for _ in streams]
        for s in streams:
            s.wait_stream(torch.cuda.current_stream())
        for i in range(len(xs)):
            for j, s in enumerate(streams):
                with torch.cuda.stream(s):
                    torch.cuda._sleep(20_000)  # both streams' calls overlap on the device
                    got[j][(i + j) % len(xs)] = qkgen.gemv(qt, xs[(i + j) % len(xs)], path=path)
        torch.cuda.synchronize()
        assert len(bound.scratch) == 1 + len({s.cuda_stream for s in streams})
        for j in range(len(streams)):
            for y, y0 in zip(got[j], want):
                assert torch.equal(y, y0)
        errors, out = [], {}

        def worker(t):
            try:
                for r in range(30):
                    i = (t + r) % len(xs)
                    out[t, r] = (i, qkgen.gemv(qt, xs[i], path=path))
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        torch.cuda.synchronize()
        assert not errors and all(torch.equal(y, want[i]) for i, y in out.values())
        keys = set(bound.scratch)
        graph, xg = torch.cuda.CUDAGraph(), xs[0].clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            qkgen.gemv(qt, xg, path=path)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            yg = qkgen.gemv(qt, xg, path=path)
        assert set(bound.scratch) - keys <= {side.cuda_stream}  # the capture stream kept nothing
        for i in (1, 2):
            xg.copy_(xs[i])
            graph.replay()
            qkgen.gemv(qt, xs[0], path=path)  # an eager call between replays, on its own scratch
            torch.cuda.synchronize()
            assert torch.equal(yg, want[i])


def test_a_device_buffer_dropped_during_a_capture_is_freed_after_it(cuda_device, torch_cuda):
    """cuMemFree inside a capture would end it with an error (torch captures in global mode), and a
    garbage collection may drop qkgen's buffers (a numpy weight's device copy) at any allocation:
    the free waits until the capture is over, and the graph still replays."""
    from qkgen.backends import cuda_driver

    torch = torch_cuda
    buf = cuda_driver.DeviceBuffer(cuda_device.cu, cuda_device.ctx.handle, 1 << 20)
    ptr = buf.ptr
    x = torch.randn(64, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = x * 2
        del buf
        assert ptr in [p for _, _, p in cuda_driver._deferred]
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, x * 2)
    cuda_driver.DeviceBuffer(cuda_device.cu, cuda_device.ctx.handle, 16)  # frees what waited
    assert ptr not in [p for _, _, p in cuda_driver._deferred]


@pytest.mark.parametrize("fmt, m, dtype", [("q4_0", 1, "bfloat16"), ("q5_1", 8, "float32"), ("nf4", 8, "float32")])
def test_two_launch_calls_start_their_product_early_on_sm90(torch_cuda, fmt, m, dtype):
    """On sm_90 on (target.grid_dependency) a call's second kernel (the product reading x's q8_1 or f16
    copy) is launched programmatically and waits in-kernel; eager, captured and replayed, and one
    call after another on new x, it gives what the one-kernel or unwaited forms give."""
    from qkgen.runtime import api

    torch = torch_cuda
    w = np.random.default_rng(1).standard_normal((N, K)).astype(np.float32)
    qt = _on_cuda(torch, reference.quantize(w, fmt))
    x = torch.randn(m, K, device="cuda", dtype=getattr(torch, dtype))
    plans, _ = api.gemv_plans(qt, x, None)
    assert len(plans) == 2
    sm90 = torch.cuda.get_device_capability() >= (9, 0)  # the device's, not its target's: that is what is tested
    assert plans[1].dev.target.grid_dependency == sm90
    assert [p.kernel.programmatic for p in plans] == [False, sm90] and plans[1].ks.grid_wait == sm90
    ys = [qkgen.gemv(qt, x * (i + 1)) for i in range(4)]  # back to back: each product waits for its own x
    want = [qkgen.gemv(qt, x * (i + 1), path="float").float() for i in range(4)]
    for y, ref in zip(ys, want):
        assert float((y.float() - ref).norm() / ref.norm()) < 2e-2
    graph, xin = torch.cuda.CUDAGraph(), x.clone()
    with torch.cuda.graph(graph):
        yg = qkgen.gemv(qt, xin)
    for i in range(3):
        xin.copy_(x * (i + 2))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(yg, ys[i + 1])
