"""What every backend provides: device discovery, memory, compilation and launch.

Backends compile and launch rendered sources; they never generate code. Each backend module
imports its runtime package lazily (inside functions), so `import qkgen` never needs a GPU stack,
and `is_available()` never raises.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import dtypes
from ..cache import cache_dir, discard, load_entry, store_entry
from ..errors import BackendUnavailable, QKGenValueError
from ..kernels.target import Target
from ..version import __version__
from .launch import arg_template, filled, launch_shape  # noqa: F401  (backends import launch_shape from here)

VECTOR_ALIGN = 16  # kernels use 16-byte vector loads and stores on buffer starts
# Tests of kernel variants (the quick_build marker, tests/conftest.py) build without the device
# compiler's optimizer (Device.unoptimized): the same source and arithmetic, built much faster (Intel's
# CPU OpenCL, 2 cores, 2026-12-02: an M = 8 int8-dot GEMV in 0.10 s instead of 8.56). The options are
# part of every cache key, so optimized and unoptimized builds never mix. Never for timing.
QUICK_BUILDS = False


def bundle_source(kss, line_suffix: str | None = None) -> str:
    """One C++ translation unit of several kernels: the includes first (the headers' guards make the
    repeats no-ops), then each kernel's source in a namespace of its own (helpers keep their names;
    kernels are extern "C" with unique names). With `line_suffix` each source opens with
    #line 1 "<name><line_suffix>", so compiler messages name the kernel's own file and line."""
    includes = dict.fromkeys(line for ks in kss for line in ks.source.splitlines() if line.startswith("#include"))
    line = (lambda ks: f'#line 1 "{ks.name}{line_suffix}"\n') if line_suffix else (lambda ks: "")
    return "\n".join([*includes, *(f"namespace qk_{i} {{\n{line(ks)}{ks.source}}}" for i, ks in enumerate(kss))])


def host_dtype(name: str) -> np.dtype:
    """The numpy dtype of a host copy of dtypes.py `name` (bf16: uint16 bit patterns)."""
    return dtypes.get(name).np


def torch_dtype(torch, name: str):
    """The torch dtype of a dtypes.py name (torch outputs for torch inputs)."""
    return getattr(torch, "bfloat16" if name == "bf16" else host_dtype(name).name)  # host: bf16 as uint16


def scalar_dtype(arg) -> str | None:
    """"u32" / "f32" for a scalar kernel argument, None for anything else."""
    if arg.kind == "scalar":
        return arg.dtype
    return arg.kind if arg.kind in ("u32", "f32") else None  # argument lists of the older render()


def local_nbytes(dtype_name: str, count: int) -> int:
    """Bytes of `count` elements of a dtypes.py name (a C type name is accepted too)."""
    by_ctype = {d.ctype: d.size for d in dtypes.DTYPE_TABLE.values()}
    row = dtypes.DTYPE_TABLE.get(dtype_name)
    size = row.size if row is not None else by_ctype.get(dtype_name)
    if size is None or not isinstance(count, (int, np.integer)) or count < 0:
        raise QKGenValueError(f"local_arg: {count!r} x {dtype_name!r}; allowed: a count >= 0 of one of "
                              f"{', '.join(dtypes.DTYPE_TABLE)}")  # fmt: skip
    return size * int(count)


def strip_prefix(reason: str, backend: str) -> str:
    """A reason without its leading "<backend>: " (messages carry the prefix once)."""
    while reason.startswith(f"{backend}: "):
        reason = reason[len(backend) + 2 :]
    return reason


@dataclass
class DeviceInfo:
    backend: str
    index: int
    name: str
    kind: str  # "gpu", "cpu", "accelerator"
    platform: str
    target: Target
    details: dict = field(default_factory=dict)
    aliases: tuple[str, ...] = ()  # other names a user may pick it by ("pocl")

    def matches(self, text: str) -> bool:
        """Whether `text` is a (case-insensitive) substring of its name, platform, kind or aliases."""
        return text.lower() in " ".join((self.name, self.platform, self.kind, *self.aliases)).lower()

    def line(self) -> str:
        t = self.target
        caps = [t.lang]
        caps += [k for k in ("fp16", "bf16", "dot4") if getattr(t, k)]
        if t.inline_ptx:
            caps.append("inline PTX")
        if t.subgroup_size and t.inline_ptx:  # NVIDIA's OpenCL: its warps, by PTX shuffles
            caps.append(f"warps of {t.subgroup_size} as sub-groups")
        elif t.subgroup_size:
            sizes = f" of {'/'.join(map(str, t.subgroup_sizes))}" if t.subgroup_sizes else ""
            caps.append(f"sub-group {t.subgroup_size}{sizes}")
        else:
            caps.append("no sub-groups")
        if t.mma:
            caps.append("mma")
        if t.arch:
            caps.append(t.arch)
        extra = ", ".join(f"{k} {v}" for k, v in self.details.items())
        return f"[{self.index}] {self.name} ({self.kind}, {self.platform}; {', '.join(caps)}" + (
            f"; {extra})" if extra else ")"
        )


class Backend(ABC):
    name: str

    def is_available(self) -> bool:
        """True when the runtime imports and shows at least one device. Never raises."""
        return self.why_unavailable() is None

    def why_unavailable(self) -> str | None:
        """None when usable, else a one-line reason without the backend's name in front (package
        missing, no device, driver error). Never raises."""
        try:
            return None if self.devices() else "no device found"
        except BackendUnavailable as e:
            return strip_prefix(str(e), self.name)
        except Exception as e:  # a broken driver must not break discovery
            return f"driver error: {type(e).__name__}: {e}"

    @abstractmethod
    def devices(self) -> list[DeviceInfo]:
        """Devices in preference order (GPUs first). Raises BackendUnavailable with a reason."""

    @abstractmethod
    def _open(self, info: DeviceInfo) -> Device: ...

    def resolve(self, device: int | str | None = None) -> DeviceInfo:
        """The DeviceInfo a device index or name substring means (None: the preferred one)."""
        devs = self.devices()
        if not devs:
            raise BackendUnavailable(f"{self.name}: no device found")
        return pick_device(devs, device, self.name)

    def open(self, device: int | str | None = None) -> Device:
        """A new Device (backends.open_device keeps one per physical device: use that)."""
        return self._open(self.resolve(device))

    def adopt(self, handle: Any) -> tuple[Any, Device] | None:
        """(key, Device) for a user's own runtime object naming a device (a context or queue), or
        None if `handle` is not one this backend understands. The key identifies the object, so
        the same context/queue gives the same Device."""
        return None


def pick_device(devs: list[DeviceInfo], device: int | str | None, backend: str) -> DeviceInfo:
    names = "; ".join(f"{d.index}: {d.name} ({d.platform})" for d in devs)
    if device is None:
        return devs[0]
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        if 0 <= int(device) < len(devs):
            return devs[int(device)]
    elif isinstance(device, str) and device.strip():
        if device.isdigit() and int(device) < len(devs):
            return devs[int(device)]
        hits = [d for d in devs if d.matches(device)]
        if hits:
            return hits[0]
    raise QKGenValueError(f"device: {device!r} not found on {backend}; allowed: an index or a name "
                          f"substring of {names}")  # fmt: skip


class Device(ABC):
    """An opened device: its target, memory, compile cache and launches."""

    backend: str
    info: DeviceInfo
    unoptimized: tuple[str, ...] = ()  # the build options that turn the optimizer off (QUICK_BUILDS)

    def __init__(self, info: DeviceInfo):
        self.info = info
        self._kernels: dict[tuple[str, str], Any] = {}
        self._compile_lock = threading.RLock()  # one build of a kernel, however many threads ask

    @property
    def target(self) -> Target:
        """What this device can do, as the renderer takes it."""
        return self.info.target

    # ---- compilation: memory cache in front of a disk cache ----
    def compile(self, ks) -> Any:
        opts = self.build_options(ks)
        key = (ks.sha, " ".join(opts))
        with self._compile_lock:
            if key not in self._kernels:
                self._kernels[key] = self._build(ks, opts, self.disk_key(ks, opts))
            return self._kernels[key]

    def compile_many(self, kss) -> list:
        """compile() for several kernels; backends whose builds share a fixed cost override it."""
        return [self.compile(ks) for ks in kss]

    def disk_key(self, ks, opts: list[str]) -> str:
        """Everything that changes the binary: source, options, device, driver/toolkit, qkgen."""
        parts = [__version__, ks.sha, " ".join(opts), *self.identity()]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def cache_path(self, key: str, suffix: str) -> Any:
        return cache_dir(self.backend, key + suffix)

    def cache_load(self, key: str, suffix: str) -> bytes | None:
        """A stored entry whose digest matches, else None (a damaged one is deleted)."""
        return load_entry(self.cache_path(key, suffix), key + suffix)

    def cache_store(self, key: str, suffix: str, blob: bytes) -> None:
        store_entry(self.cache_path(key, suffix), blob, key + suffix)

    def cache_discard(self, key: str, suffix: str) -> None:
        """Delete an entry the runtime refused although its digest matched."""
        discard(self.cache_path(key, suffix))

    @abstractmethod
    def identity(self) -> list[str]:
        """Device name, driver and toolkit versions: part of every cache key."""

    def build_options(self, ks) -> list[str]:
        return self.quick_build_options()

    def quick_build_options(self) -> list[str]:
        """`unoptimized` while QUICK_BUILDS is set, else nothing."""
        return list(self.unoptimized) if QUICK_BUILDS else []

    @abstractmethod
    def _build(self, ks, opts: list[str], key: str) -> Any: ...

    # ---- memory ----
    @abstractmethod
    def is_native(self, array: Any) -> bool:
        """True for this backend's own device arrays (used without a copy)."""

    @abstractmethod
    def native_buffer(self, array: Any, name: str) -> Any:
        """The launch argument for a native array, after checking device, layout and alignment."""

    @abstractmethod
    def upload(self, host: np.ndarray) -> Any: ...

    @abstractmethod
    def empty(self, count: int, dtype: str, like: Any = None, poison: bool = False) -> tuple[Any, Any]:
        """(launch argument, array object) for a new buffer of `count` elements of a dtypes.py
        name ("u8" included); `like` picks the array type (e.g. torch when the inputs are torch);
        poison fills it with all-ones bytes (NaN in f32, f16 and bf16)."""

    def output_converter(self, like: Any, count: int, dtype: str, shape: tuple | None) -> Callable | None:
        """For calls whose outputs are like `like`: a function (out, poison) -> (launch value, out)
        that checks a caller's array is one the call would make (count elements of `dtype` in
        `shape`, on this device) and fills it with all-ones bytes where poison is set; None where
        callers cannot give outputs (the default)."""
        return None

    def scratch_keyer(self, like: Any) -> Callable[[], Any] | None:
        """For calls whose outputs are like `like`: a function giving, at each call, the key under
        which a call may reuse the intermediate buffers of earlier calls (an output one launch
        writes and a later launch of the same call reads): calls of one key run in launch order,
        one after another. The function gives None where a call must make its own (a CUDA graph
        being captured). None: every call makes its own (the default)."""
        return None

    def zeros(self, count: int, dtype: str, like: Any = None) -> tuple[Any, Any]:
        """empty()'s buffer filled with zero bytes before any later launch (a kernel's flags that
        only ever get set)."""
        raise NotImplementedError(f"zeros: {self.backend}")

    @abstractmethod
    def download(self, array: Any, dtype: str, count: int) -> np.ndarray: ...

    def discard(self, buffers: list) -> None:
        """Free a finished call's own device buffers (launch values of upload() or empty()) now,
        rather than whenever the last reference goes; the default leaves them to the collector."""

    def local_arg(self, dtype: str, count: int) -> Any:
        """The launch value for an Arg of kind "local": `count` elements of dtypes.py `dtype`."""
        raise QKGenValueError(f"local_arg: {self.backend} kernels take no local-memory arguments; "
                              "allowed: on sycl and opencl")  # fmt: skip

    @abstractmethod
    def launch(self, kernel: Any, args: list, global_size, local_size, local_bytes: int = 0) -> Any:
        """Enqueue one launch over a 1-, 2- or 3-D range (an int or a tuple of 1..3 ints each);
        local_bytes is dynamic local memory (CUDA shared memory bytes)."""

    @abstractmethod
    def synchronize(self) -> None: ...

    # ---- the warm call path: a bound call asks these once, then calls what they return ----
    def launcher(self, kernel: Any, args: list, dynamic: tuple[int, ...], global_size, local_size,
                 local_bytes: int = 0) -> Callable[[list], Any]:  # fmt: skip
        """run(values): launch `kernel` with `args`, the positions in `dynamic` replaced by
        `values` in order; the geometry is checked once, here. `args` holds the first call's values
        at the dynamic positions: later values must be of the same kinds (a backend may settle its
        stream or argument packing on them)."""
        g, loc = launch_shape(global_size, local_size)
        template, launch = arg_template(args, dynamic), self.launch

        def run(values: list) -> Any:
            return launch(kernel, filled(template, dynamic, values), g, loc, local_bytes)

        return run

    def input_converter(self, sample: Any, name: str, dtypes: tuple[str, ...]) -> Callable[[Any], Any]:
        """convert(array): the launch argument of an input array of `sample`'s type, dtype and shape
        (the caller keys on those), checking what may still differ (device, layout, alignment)."""
        as_input = self.as_input
        return lambda a: as_input(a, name, dtypes)

    def allocator(self, count: int, dtype: str, like: Any, shape: tuple | None) -> Callable:
        """alloc(like, poison) -> (launch argument, array) of a new output as empty() gives it, the
        array in `shape` where given and the output is native (`like` not None)."""
        empty = self.empty

        def alloc(like: Any, poison: bool) -> tuple[Any, Any]:
            buf, arr = empty(count, dtype, like=like, poison=poison)
            return buf, arr if shape is None or like is None or shape == (count,) else arr.reshape(shape)

        return alloc

    @abstractmethod
    def time_ms(self, kernel: Any, args: list, global_size, local_size, local_bytes: int = 0) -> float:
        """Device time of one launch in milliseconds (device events)."""

    # ---- what a benchmark needs to know ----
    @abstractmethod
    def copy_ceiling(self, nbytes: int, iters: int = 20, warmup: int = 3) -> dict:
        """The device-to-device copy bandwidth, measured now: {"gbps": bytes read plus written per
        second / 1e9 (median of iters), "method": how, "buffer_bytes": the size used, "all": every
        method's gbps}."""

    @abstractmethod
    def l2_bytes(self) -> int | None:
        """The device's last-level (L2 / global memory) cache size, or None if it does not say."""

    def as_input(self, array: Any, name: str, dtypes: tuple[str, ...]) -> Any:
        """A kernel argument for an input array: native arrays as they are, numpy copied in."""
        if self.is_native(array):
            dt = dtype_name(getattr(array, "dtype", ""))
            if dt not in dtypes:
                raise QKGenValueError(f"{name}: dtype {dt}; allowed: {', '.join(dtypes)}")
            return self.native_buffer(array, name)
        if isinstance(array, np.ndarray):
            if str(array.dtype) not in dtypes:
                raise QKGenValueError(f"{name}: dtype {array.dtype}; allowed: {', '.join(dtypes)}")
            if not array.flags.c_contiguous:
                raise QKGenValueError(f"{name}: array is not contiguous; allowed: C-contiguous arrays")
            return self.upload(array)
        raise QKGenValueError(
            f"{name}: {type(array).__module__}.{type(array).__name__} is not usable on {self.backend}; "
            f"allowed: numpy arrays or {self.native_name}"
        )

    native_name = "device arrays"


@functools.lru_cache(maxsize=64)
def dtype_name(dtype: Any) -> str:
    """"float16" for numpy's, torch's ("torch.float16") and the array libraries' dtype objects
    (str() of a numpy dtype costs microseconds, and every warm call asks)."""
    return str(dtype).replace("torch.", "")


def median_of(run, iters: int, warmup: int) -> float:
    """The median of `iters` calls of run() after `warmup` unrecorded ones."""
    import statistics

    for _ in range(max(0, int(warmup))):
        run()
    return statistics.median(run() for _ in range(max(1, int(iters))))


def copy_gbps(nbytes: int, ms: float) -> float:
    """GB/s of a copy of nbytes (read plus written) taking ms (at least the timer's 1 ns)."""
    return 2 * nbytes / (max(ms, 1e-6) * 1e-3) / 1e9


def ceiling_bytes(nbytes: int, max_alloc: int, global_mem: int) -> int:
    """A copy buffer size the device can hold twice, in whole 4 KiB pages."""
    if not isinstance(nbytes, (int, np.integer)) or nbytes < 4096:
        raise QKGenValueError(f"nbytes: {nbytes!r}; allowed: an int >= 4096")
    return int(min(nbytes, max_alloc, global_mem // 4)) // 4096 * 4096
