"""The one place bench calls into qkgen's library: the runtime that prepares and launches kernels,
the renderer (compile timing), the format table and the reference codec.

Those modules are being reorganised (an op registry with launch plans), so every import of them
is made here, lazily inside a function: when their paths or calls change, only this file does.
The rest of bench sees a few plain objects: a kernel's name, source hash and render keywords,
and `Launches`, whose time_ms() runs one set once between device events.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np


def _mod(name: str):
    """qkgen.<name> as a module: `from qkgen import render` would give the function that the
    package re-exports under the module's name."""
    return importlib.import_module(f"qkgen.{name}")


# ---- format table, reference codec, limits ----


def max_m() -> int:
    """The most rows of x one GEMV launch takes."""
    return _mod("api").MAX_M


def format_row(name: str):
    """The format row called `name` (a FormatError, a ValueError, lists the names)."""
    return _mod("formats").get(name)


def check_blocksize(fmt, size: int) -> int:
    return _mod("formats").check_blocksize(fmt, size)


def quantize_host(x: np.ndarray, name: str, **opts):
    """x quantized on the host by the reference codec (bit-exact with bitsandbytes / gguf)."""
    return _mod("api").quantize(x, name, **opts)


def dequantize_host(qt) -> np.ndarray:
    """qt's values as float32, by the reference codec."""
    return _mod("reference").dequantize(qt)


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to f16, or to bf16 bit patterns (uint16)."""
    return _mod("reference").round_to(x, dtype)


def to_f32(host: np.ndarray, dtype: str) -> np.ndarray:
    """A host copy of a kernel input or output (bf16: uint16 bits) as float32."""
    return _mod("reference").bf16_to_f32(host) if dtype == "bf16" else np.asarray(host, dtype=np.float32)


def int8dot_formats() -> tuple[str, ...]:
    """Weight formats of qkgen's int8dot GEMV path; empty where this build has no such path."""
    render = _mod("render")
    if not {"quantize_q8_1", "gemv_int8dot"} <= set(render.ops()):
        return ()
    return tuple(getattr(render, "INT8DOT_FORMATS", ()))


def int8dot_act():
    """The format row the int8dot path quantizes x to (q8_1)."""
    return format_row(_mod("render").INT8DOT_ACT)


# ---- kernels and launches ----


@dataclass
class Launches:
    """Launches that run one after another on fresh buffers: time_ms() sums their device times."""

    dev: Any
    steps: list[tuple]  # (kernel, args, global size, local size)
    keep: Any = None  # buffers the args point at (CUDA args are raw pointers)

    def time_ms(self) -> float:
        return sum(self.dev.time_ms(k, a, g, lo) for k, a, g, lo in self.steps)


def _kwargs(op: str, fmt: str, qt, dtype: str, **more) -> dict:
    """render() keywords of a kernel, so a fresh process can render (and compile) the same source."""
    return {"op": op, "format": fmt, "dtype": dtype, "blocksize": qt.blocksize, "nested": qt.nested,
            "scale_mode": qt.scale_mode, **more}  # fmt: skip


class Dequantize:
    """qkgen's dequantize kernel of host qtensor qt to dtype, compiled on dev."""

    def __init__(self, dev, qt, dtype: str, device: Any):
        api = _mod("api")
        _, self._ks, self._kernel = api.prepare_dequantize(qt, dtype, dev.backend, device)
        self.dev, self.qt = dev, qt
        self.name, self.sha = self._ks.name, self._ks.sha
        self.render_kwargs = _kwargs("dequantize", qt.format.name, qt, dtype)

    def bind(self, out_buf) -> Launches:
        api = _mod("api")
        # numpy inputs: launch_dequantize uploads fresh device buffers, i.e. a new set
        args, gsize, lsize = api.launch_dequantize(self.dev, self._ks, self.qt, out_buf)
        return Launches(self.dev, [(self._kernel, args, gsize, lsize)], keep=args)


class GemvFloat:
    """qkgen's float-path GEMV y = x @ W.T of host qtensor qt and host activations x [M, K]."""

    def __init__(self, dev, qt, x: np.ndarray, dtype: str, device: Any):
        api = _mod("api")
        _, self._ks, self._kernel, self.shape = api.prepare_gemv(qt, x, dev.backend, device)
        self.dev, self.qt, self.x = dev, qt, x
        self.name, self.sha = self._ks.name, self._ks.sha
        mmax = 1 if self.shape[2] == 1 else api.MAX_M
        self.render_kwargs = _kwargs("gemv", qt.format.name, qt, dtype, mmax=mmax)

    def bind(self, y_buf) -> Launches:
        api = _mod("api")
        # numpy inputs: launch_gemv uploads fresh device buffers (W, statistics, x), i.e. a new set
        args, gsize, lsize = api.launch_gemv(self.dev, self._ks, self.qt, self.x, y_buf, self.shape)
        return Launches(self.dev, [(self._kernel, args, gsize, lsize)], keep=args)


class GemvInt8dot:
    """qkgen's int8dot GEMV: quantize_q8_1 (x -> q8_1 blocks) then gemv_int8dot, two launches."""

    def __init__(self, dev, qt, x: np.ndarray, dtype: str):
        api, int8dot = _mod("api"), _mod("int8dot")
        m, k = x.shape
        self.dev, self.qt, self.x, self.shape = dev, qt, x, (qt.shape[0], k, m)
        act = int8dot_act()
        self._ksq, self._kq, self._nblocks = int8dot.prepare_quantize(dev, m, k, dtype)
        self._ksg, self._kg = int8dot.prepare_gemv_int8dot(dev, qt, m, dtype)
        self.xq_bytes = self._nblocks * act.block_bytes
        self.name = f"{self._ksq.name} + {self._ksg.name}"
        mmax = 1 if m == 1 else api.MAX_M
        self.kernels = [{"op": "quantize_q8_1", "format": act.name, "dtype": dtype, "sha": self._ksq.sha},
                        {"op": "gemv_int8dot", "format": qt.format.name, "dtype": dtype, "mmax": mmax,
                         "sha": self._ksg.sha}]  # fmt: skip

    @staticmethod
    def applies(qt, k: int) -> bool:
        """True when qt's format has an int8dot path in this build and K is whole q8_1 blocks."""
        return qt.format.name in int8dot_formats() and k % int8dot_act().block == 0

    def bind(self, y_buf) -> Launches:
        int8dot = _mod("int8dot")
        dev = self.dev
        xq_buf, xq = dev.empty(self.xq_bytes // 2, "f16")  # q8_1 blocks in 2-byte elements, as int8dot does
        qargs, gq, lq = int8dot.launch_quantize(dev, self._ksq, self.x, xq_buf, self._nblocks)
        gargs, gg, lg = int8dot.launch_gemv_int8dot(dev, self._ksg, self.qt, xq_buf, y_buf, self.shape)
        steps = [(self._kq, qargs, gq, lq), (self._kg, gargs, gg, lg)]
        return Launches(dev, steps, keep=(qargs, gargs, xq_buf, xq))


def render_kernel(dev, kwargs: dict):
    """The kernel source that `kwargs` (from a kernel object's render_kwargs) names, for dev:
    what the compile-time processes compile. Returns (source object, name, sha)."""
    kw = dict(kwargs)
    ks = _mod("render").render(kw.pop("op"), kw.pop("format"), dev.backend, caps=dev.caps, **kw)
    return ks, ks.name, ks.sha
