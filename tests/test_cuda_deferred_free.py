"""A DeviceBuffer dropped while torch captures a CUDA graph is freed after the capture, not during
it: cuMemFree inside a capture ends it with an error, and a garbage collection can drop a buffer at
any moment. (Only a capture on the thread that drops the buffer is seen: see capture_in_progress.)
Checked here with a stand-in driver that records its calls; the GPU suite does it for real
(tests/gpu/test_cuda_graph.py)."""

from __future__ import annotations

import pytest

from qkgen.backends import cuda_driver


class RecordingDriver:
    """The LibCuda calls DeviceBuffer makes, each recorded; allocations hand out rising pointers."""

    def __init__(self):
        self.calls: list[tuple[str, int]] = []
        self.next_ptr = 0x1000
        self.gone: set[int] = set()  # pointers whose free fails (their context destroyed)

    def __call__(self, name, *args):
        if name == "cuMemAlloc_v2":
            args[0]._obj.value = self.next_ptr
            self.next_ptr += 0x1000
        elif name == "cuMemFree_v2":
            if args[0].value in self.gone:
                raise cuda_driver.CUDAError(name, 201, "invalid context")
            self.calls.append((name, args[0].value))

    def freed(self) -> list[int]:
        return [ptr for name, ptr in self.calls if name == "cuMemFree_v2"]


@pytest.fixture
def capturing(monkeypatch):
    state = {"on": False}
    monkeypatch.setattr(cuda_driver, "capture_in_progress", lambda: state["on"])
    monkeypatch.setattr(cuda_driver, "_deferred", [])
    return state


def test_a_buffer_dropped_during_a_capture_is_freed_after_it(capturing):
    cu = RecordingDriver()
    kept = cuda_driver.DeviceBuffer(cu, 1, 64)
    dropped = cuda_driver.DeviceBuffer(cu, 1, 64)
    ptr = dropped.ptr
    capturing["on"] = True
    del dropped
    assert cu.freed() == []
    assert [p for _, _, p in cuda_driver._deferred] == [ptr]
    during = cuda_driver.DeviceBuffer(cu, 1, 64)  # an allocation while still capturing frees nothing
    assert cu.freed() == []
    capturing["on"] = False
    fresh = cuda_driver.DeviceBuffer(cu, 1, 64)  # the first allocation after the capture frees it
    assert cu.freed() == [ptr] and cuda_driver._deferred == []
    kept_ptr = kept.ptr
    kept.free()
    assert cu.freed() == [ptr, kept_ptr] and fresh.ptr and during.ptr


def test_a_free_outside_a_capture_also_frees_what_waited(capturing):
    cu = RecordingDriver()
    a, b = cuda_driver.DeviceBuffer(cu, 1, 8), cuda_driver.DeviceBuffer(cu, 1, 8)
    pa, pb = a.ptr, b.ptr
    capturing["on"] = True
    a.free()
    capturing["on"] = False
    b.free()
    assert sorted(cu.freed()) == sorted([pa, pb]) and cuda_driver._deferred == []
    b.free()  # a second free of one buffer frees nothing
    assert len(cu.freed()) == 2


def test_no_torch_means_no_capture(monkeypatch):
    monkeypatch.delitem(__import__("sys").modules, "torch", raising=False)
    assert cuda_driver.capture_in_progress() is False



def test_a_failing_deferred_free_does_not_fail_another_call(capturing):
    """A deferred pointer whose free fails (its context gone) is dropped: the next buffer's free
    still frees that buffer and raises nothing."""
    cu = RecordingDriver()
    a, b = cuda_driver.DeviceBuffer(cu, 1, 8), cuda_driver.DeviceBuffer(cu, 1, 8)
    pa, pb = a.ptr, b.ptr
    cu.gone.add(pa)
    capturing["on"] = True
    a.free()
    capturing["on"] = False
    b.free()
    assert cu.freed() == [pb] and cuda_driver._deferred == []


def test_a_launch_after_the_capture_frees_what_waited(capturing, monkeypatch):
    """torch's warm path makes no DeviceBuffer, so launches drain the list too."""
    cu = RecordingDriver()
    a = cuda_driver.DeviceBuffer(cu, 1, 8)
    pa = a.ptr
    capturing["on"] = True
    del a
    capturing["on"] = False
    monkeypatch.setattr(cuda_driver, "_check_launch", lambda *a: (_ for _ in ()).throw(RuntimeError("stop")))
    with pytest.raises(RuntimeError, match="stop"):  # stopped before anything reaches the driver
        cuda_driver.launch_kernel(cu, None, [], (1, 1, 1), (1, 1, 1), 0, 0)
    assert cu.freed() == [pa] and cuda_driver._deferred == []
