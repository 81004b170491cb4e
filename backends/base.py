"""What every backend provides: device discovery, memory, compilation and launch.

Backends compile and launch rendered sources; they never generate code. Each backend module
imports its runtime package lazily (inside functions), so `import qkgen` never needs a GPU stack,
and `is_available()` never raises.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..cache import cache_dir, write_atomic
from ..errors import BackendUnavailable, QKGenValueError
from ..version import __version__

# Output dtypes by name, and the numpy dtype a host copy of each has (bf16: its bit patterns).
HOST_DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": np.dtype(np.uint16)}
VECTOR_ALIGN = 16  # kernels use 16-byte vector loads and stores on buffer starts


@dataclass
class DeviceInfo:
    backend: str
    index: int
    name: str
    kind: str  # "gpu", "cpu", "accelerator"
    platform: str
    caps: dict
    details: dict = field(default_factory=dict)

    def line(self) -> str:
        extra = ", ".join(f"{k} {v}" for k, v in self.details.items())
        caps = ", ".join(k for k, v in self.caps.items() if v is True) or "no fp16/sub-groups"
        return f"[{self.index}] {self.name} ({self.kind}, {self.platform}; {caps}{'; ' + extra if extra else ''})"


class Backend(ABC):
    name: str

    def is_available(self) -> bool:
        """True when the runtime imports and shows at least one device. Never raises."""
        return self.why_unavailable() is None

    def why_unavailable(self) -> str | None:
        """None when usable, else a one-line reason (package missing, no device, driver error)."""
        try:
            return None if self.devices() else "no device found"
        except BackendUnavailable as e:
            return str(e)
        except Exception as e:  # a broken driver must not break discovery
            return f"driver error: {type(e).__name__}: {e}"

    @abstractmethod
    def devices(self) -> list[DeviceInfo]:
        """Devices in preference order (GPUs first). Raises BackendUnavailable with a reason."""

    @abstractmethod
    def _open(self, info: DeviceInfo) -> Device: ...

    def open(self, device: int | str | None = None) -> Device:
        """A device by index or name substring (None: the first, i.e. the preferred one)."""
        devs = self.devices()
        if not devs:
            raise BackendUnavailable(f"{self.name}: no device found")
        return self._open(pick_device(devs, device, self.name))


def pick_device(devs: list[DeviceInfo], device: int | str | None, backend: str) -> DeviceInfo:
    names = "; ".join(f"{d.index}: {d.name}" for d in devs)
    if device is None:
        return devs[0]
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        if 0 <= int(device) < len(devs):
            return devs[int(device)]
    elif isinstance(device, str):
        if device.isdigit() and int(device) < len(devs):
            return devs[int(device)]
        hits = [d for d in devs if device.lower() in f"{d.name} {d.platform} {d.kind}".lower()]
        if hits:
            return hits[0]
    raise QKGenValueError(f"device: {device!r} not found on {backend}; allowed: {names}")


class Device(ABC):
    """An opened device: memory, compile cache and launches."""

    backend: str
    info: DeviceInfo

    def __init__(self, info: DeviceInfo):
        self.info = info
        self._kernels: dict[tuple[str, str], Any] = {}

    @property
    def caps(self) -> dict:
        return self.info.caps

    # ---- compilation: memory cache in front of a disk cache ----
    def compile(self, ks) -> Any:
        opts = self.build_options(ks)
        key = (ks.sha, " ".join(opts))
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
        try:
            return self.cache_path(key, suffix).read_bytes()
        except OSError:
            return None

    def cache_store(self, key: str, suffix: str, blob: bytes) -> None:
        try:
            write_atomic(self.cache_path(key, suffix), blob)
        except OSError:
            pass  # a read-only cache costs a recompile, not a failure

    @abstractmethod
    def identity(self) -> list[str]:
        """Device name, driver and toolkit versions: part of every cache key."""

    def build_options(self, ks) -> list[str]:
        return []

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
        """(launch argument, array object) for a new output of `count` elements of dtype; `like`
        picks the array type (e.g. torch when the inputs are torch); poison fills it with NaN bytes."""

    @abstractmethod
    def download(self, array: Any, dtype: str, count: int) -> np.ndarray: ...

    def local_arg(self, ctype: str, count: int) -> Any:
        """The launch argument for a local-memory array passed as a kernel argument (Arg kind
        "local"); only dialects with locals_as_params (SYCL) render those."""
        raise NotImplementedError(f"{self.backend}: kernels take no local-memory arguments")

    @abstractmethod
    def launch(self, kernel: Any, args: list, global_size: int, local_size: int) -> Any: ...

    @abstractmethod
    def synchronize(self) -> None: ...

    def time_ms(self, kernel: Any, args: list, global_size: int, local_size: int) -> float:
        """Device time of one launch in milliseconds (device events)."""
        raise NotImplementedError(f"{self.backend}: event timing not implemented")

    def as_input(self, array: Any, name: str, dtypes: tuple[str, ...]) -> Any:
        """A kernel argument for an input array: native arrays as they are, numpy copied in."""
        if self.is_native(array):
            dt = str(getattr(array, "dtype", "")).replace("torch.", "")
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
