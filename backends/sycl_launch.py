"""Kernel launches through the SYCL helper (qk_launch): one launch with its arguments packed each
time (launch), and a launch whose argument table is packed once, for a warm call that launches the
same kernel on new arrays every time (PackedLaunch: only the USM addresses that change are written)."""

from __future__ import annotations

import ctypes as C
import threading

from .sycl_native import ARG_LOCAL, ARG_USM, ARG_VALUE, Event, Kernel, _check, _queue_ref


class LocalMem:
    """Argument placeholder: ``nbytes`` of work-group local memory for a
    ``sycl::ext::oneapi::experimental::work_group_memory<T[]>`` kernel parameter."""

    def __init__(self, nbytes: int):
        self.nbytes = int(nbytes)


def _usm_pointer(arg):
    if hasattr(arg, "__sycl_usm_array_interface__"):  # dpctl memory/tensor
        iface = arg.__sycl_usm_array_interface__
        # "offset" counts elements of typestr (e.g. "<f4": 4 bytes) past "data".
        itemsize = int(iface.get("typestr", "|u1")[2:])
        return int(iface["data"][0]) + int(iface.get("offset") or 0) * itemsize
    return None


def pack_arg(i: int, a) -> tuple:
    """(buffer, kind, size) of kernel argument i as qk_launch takes it: a USM address, a scalar's
    bytes or local memory (no buffer)."""
    if isinstance(a, LocalMem):
        return None, ARG_LOCAL, a.nbytes
    p = _usm_pointer(a)
    if p is not None:
        buf, kind = C.c_void_p(p), ARG_USM
    elif isinstance(a, C._SimpleCData):
        buf, kind = a, ARG_VALUE
    elif hasattr(a, "dtype") and hasattr(a, "tobytes") and getattr(a, "ndim", 1) == 0:
        buf, kind = C.create_string_buffer(a.tobytes(), a.dtype.itemsize), ARG_VALUE
    else:
        # Plain int/float would hide the C type (int vs uint64, float vs double).
        raise TypeError(f"kernel argument {i}: use a numpy/ctypes scalar or "
                        f"USM memory, not {type(a).__name__}")
    return buf, kind, C.sizeof(buf)


def launch(queue, kernel: Kernel, args, global_size, local_size,
           local_mem_bytes: int = 0) -> Event:
    """Enqueue ``kernel`` over a 1-, 2- or 3-D nd_range; returns without waiting.

    ``global_size`` / ``local_size``: an int or a tuple of 1..3 ints (the same
    length; each global size a multiple of its local size).
    ``args`` items: dpctl USM memory / usm_ndarray (passed as pointers),
    numpy scalars or ctypes scalars (by value), ``LocalMem(n)``.
    ``local_mem_bytes`` sets the work_group_scratch_size launch property
    (``get_work_group_scratch_memory()``); see _CRASHY_SOURCE for why
    run-time compiled kernels use ``LocalMem`` instead for now.
    """
    gsz = (global_size,) if isinstance(global_size, int) else tuple(global_size)
    lsz = (local_size,) if isinstance(local_size, int) else tuple(local_size)
    if not 1 <= len(gsz) <= 3 or len(gsz) != len(lsz):
        raise ValueError(f"global_size {global_size!r} / local_size {local_size!r}: 1 to 3 dimensions each, "
                         "the same number")
    lib = kernel._lib
    n = len(args)
    ptrs, sizes, kinds = (C.c_void_p * n)(), (C.c_size_t * n)(), (C.c_int * n)()
    keep = []  # buffers must live until qk_launch has copied them
    for i, a in enumerate(args):
        buf, kinds[i], sizes[i] = pack_arg(i, a)
        if buf is not None:
            keep.append(buf)
            ptrs[i] = C.cast(C.pointer(buf), C.c_void_p)
    ev, err = C.c_void_p(), C.c_void_p()
    dims = len(gsz)
    rc = lib.qk_launch(C.c_void_p(_queue_ref(queue)), kernel._h, n, ptrs, sizes,
                       kinds, dims, (C.c_size_t * 3)(*gsz), (C.c_size_t * 3)(*lsz),
                       local_mem_bytes, C.byref(ev), C.byref(err))
    _check(lib, rc, err, f"launching {kernel.name}")
    return Event(lib, ev, keepalive=list(args))


class PackedLaunch:
    """launch() of one kernel over one nd_range, its argument table packed once: a call writes the
    USM addresses of the arguments at `dynamic` into their slots and enqueues. qk_launch copies the
    table before it returns, so the write and the enqueue are one step under a lock and threads
    cannot mix their addresses. The enqueue makes no event. `args` holds the first call's values
    at the dynamic positions (USM memory; later values must be USM memory too)."""

    def __init__(self, queue, kernel: Kernel, args, dynamic: tuple[int, ...], global_size: tuple[int, ...],
                 local_size: tuple[int, ...], local_mem_bytes: int = 0):
        n = len(args)
        self._ptrs, self._sizes, self._kinds = (C.c_void_p * n)(), (C.c_size_t * n)(), (C.c_int * n)()
        self._keep, slots = [], {}  # the packed buffers; the dynamic ones by position
        # the fixed arguments themselves (a weight's USM memory): each call returns them with its
        # values, for the device to keep until the queue is waited on (launch()'s event keeps its own)
        self._fixed = tuple(a for i, a in enumerate(args) if i not in dynamic)
        for i, a in enumerate(args):
            buf, self._kinds[i], self._sizes[i] = pack_arg(i, a)
            if i in dynamic:
                if self._kinds[i] != ARG_USM:
                    raise TypeError(f"kernel argument {i}: a changing argument must be USM memory, "
                                    f"not {type(a).__name__}")
                buf = slots[i] = C.c_void_p(0)  # no call's address is kept
            if buf is not None:
                self._keep.append(buf)
                self._ptrs[i] = C.cast(C.pointer(buf), C.c_void_p)
        self._slots = [slots[i] for i in dynamic]  # in the order values come
        self._queue, self._queue_h = queue, C.c_void_p(_queue_ref(queue))
        self._kernel, self._lib, self._n = kernel, kernel._lib, n
        self._dims = len(global_size)
        self._global, self._local = (C.c_size_t * 3)(*global_size), (C.c_size_t * 3)(*local_size)
        self._local_mem = local_mem_bytes
        self._lock = threading.Lock()

    def __call__(self, values: list) -> tuple:
        """Enqueue with `values` (USM memory) at the dynamic positions, without an event (a warm call
        waits on none, and making one costs the runtime more than the rest of the launch); returns
        what must stay alive until the queue is waited on: the fixed arguments and `values`."""
        addrs = [_usm_pointer(v) for v in values]
        if None in addrs:
            v = values[addrs.index(None)]
            raise TypeError(f"kernel argument: use USM memory, not {type(v).__name__}")
        err = C.c_void_p()
        with self._lock:
            for slot, p in zip(self._slots, addrs):
                slot.value = p
            rc = self._lib.qk_launch(self._queue_h, self._kernel._h, self._n, self._ptrs, self._sizes, self._kinds,
                                     self._dims, self._global, self._local, self._local_mem, None,
                                     C.byref(err))  # fmt: skip
        _check(self._lib, rc, err, f"launching {self._kernel.name}")
        return self._fixed, tuple(values)
