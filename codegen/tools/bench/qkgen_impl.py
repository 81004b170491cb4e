"""The one place bench calls into qkgen's library: the runtime that prepares and launches kernels,
the renderer (compile timing), the format table and the reference codec.

Every import of them is made here: when their paths or calls change, only this file does. The
rest of bench sees a few plain objects: a kernel's name, source hash and render keywords;
`Launches`, whose launch() enqueues one set and time_ms() runs it once between device events; and
the public calls (qkgen.gemv / qkgen.dequantize) the host column times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


from ... import dtypes
from ...errors import QKGenValueError
from ...formats import check_blocksize as _check_blocksize
from ...formats import get
from ...formats import reference
from ...kernels.ops import MAX_M, get_op
from ...kernels.ops.int8dot import k_multiple
from ...kernels.render import render
from ...runtime import api
from ...kernels.ops.gemv import pairs_apply
from ...runtime.paths import default_path
from ...runtime.plan import Plan, ready
from ...runtime.quantize import quantize_device

# ---- format table, reference codec, limits ----


def max_m() -> int:
    """The most rows of x one GEMV launch takes."""
    return MAX_M


def format_row(name: str):
    """The format row called `name` (a FormatError, a ValueError, lists the names)."""
    return get(name)


def check_blocksize(fmt, size: int) -> int:
    return _check_blocksize(fmt, size)


def quantize_host(x: np.ndarray, name: str, **opts):
    """x quantized on the host by the reference codec (bit-exact with bitsandbytes / gguf)."""
    return reference.quantize(x, name, **opts)


def quantize_for_case(x: np.ndarray, name: str, backend: str, device, **opts):
    """x quantized for a benchmark case, as host arrays: on the case's device by the generated
    quantize kernels where they take the format (the reference codec's bytes on CUDA and OpenCL,
    tests/gpu/test_quantize_gpu.py, tests/test_quantize_device.py; a 4096 x 14336 q4_k weight took
    82 s on the host of a 2-core CPU machine, 3 s through its OpenCL CPU device), else on the host
    by the reference codec."""
    if not get_op("quantize").accepts(get(name)):  # int1: the host codec only
        return quantize_host(x, name, **opts)
    try:
        return quantize_device(x, name, backend=backend, device=device, **opts)
    except QKGenValueError:  # a variant the device quantizer refuses: the host codec
        return quantize_host(x, name, **opts)


def dequantize_host(qt) -> np.ndarray:
    """qt's values as float32, by the reference codec."""
    return reference.dequantize(qt)


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to f16, or to bf16 bit patterns (uint16)."""
    return reference.round_to(x, dtype)


def to_f32(host: np.ndarray, dtype: str) -> np.ndarray:
    """A host copy of a kernel input or output (bf16: uint16 bits) as float32."""
    return reference.host_f32(host, dtype)


def variant_words(fmt) -> dict[str, dict]:
    """The family's names for fmt's statistics layouts, the default first."""
    from ...formats import family_of

    return family_of(fmt).variant_words(fmt)


def bnb_function(fmt, job: str) -> str | None:
    """The bitsandbytes function doing `job` ("dequantize", "matmul", "gemv") for fmt, if any."""
    from ...formats import family_of

    return family_of(fmt).bnb_functions.get(job)


def int8dot_formats() -> tuple[str, ...]:
    """Weight formats of qkgen's int8dot GEMV path."""
    return get_op("gemv_int8dot").formats()


# ---- kernels and launches ----


@dataclass
class Launches:
    """Launches that run one after another on fresh buffers: time_ms() sums their device times."""

    dev: Any
    steps: list[tuple]  # (kernel, args, global size, local size)
    keep: Any = None  # buffers the args point at (CUDA args are raw pointers)

    def time_ms(self) -> float:
        return sum(self.dev.time_ms(k, a, g, lo) for k, a, g, lo in self.steps)

    def launch(self) -> list:
        """Enqueue the launches without waiting; their events (OpenCL/SYCL; CUDA: None each)."""
        return [self.dev.launch(k, a, g, lo) for k, a, g, lo in self.steps]


def _host(host: np.ndarray, dtype: str | None = None) -> np.ndarray:
    return host


def _kwargs(op: str, fmt: str, qt, dtype: str, **more) -> dict:
    """render() keywords of a kernel, so a fresh process can render (and compile) the same source."""
    return {"op": op, "format": fmt, "dtype": dtype, "blocksize": qt.blocksize, "nested": qt.nested,
            "scale_mode": qt.scale_mode, **more}  # fmt: skip


def _step(plan: Plan, values: dict, sizes: dict) -> tuple:
    # numpy inputs: bind() uploads fresh device buffers, i.e. a new set
    args = plan.bind(values, sizes)
    g, lo = plan.geometry(sizes)
    return (plan.kernel, args, g, lo)


class Dequantize:
    """qkgen's dequantize kernel of host qtensor qt to dtype, compiled on dev."""

    def __init__(self, dev, qt, dtype: str, device: Any):
        self._plan = api.dequantize_plan(qt, dtype, dev.backend, device)
        self.dev, self.qt = dev, qt
        self.name, self.sha = self._plan.ks.name, self._plan.ks.sha
        self.render_kwargs = _kwargs("dequantize", qt.format.name, qt, dtype)

    def bind(self, out_buf, place=_host) -> Launches:
        """One set: the weight's arrays through place(host array) (device copies, or the host
        arrays themselves, which binding uploads fresh) and the output buffer out_buf."""
        arrays, sizes = api.weight_values(self.qt)
        arrays = {k: place(v) for k, v in arrays.items()}
        step = _step(self._plan, {**arrays, "out": out_buf}, sizes)
        return Launches(self.dev, [step], keep=(step[1], arrays))


class GemvFloat:
    """qkgen's float-path GEMV y = x @ W.T of host qtensor qt and host activations x [M, K]."""

    def __init__(self, dev, qt, x: np.ndarray, dtype: str, device: Any):
        (self._plan,), self._sizes = api.gemv_plans(qt, x, "float", dev.backend, device)
        self.dev, self.qt, self.x, self.dtype = dev, qt, x, dtype
        self.shape = (self._sizes["N"], self._sizes["K"], self._sizes["M"])
        self.name, self.sha = self._plan.ks.name, self._plan.ks.sha
        self.render_kwargs = _kwargs("gemv", qt.format.name, qt, dtype, mmax=self._plan.ks.param("mmax"))

    def bind(self, y_buf, place=_host) -> Launches:
        arrays, _ = api.weight_values(self.qt)
        arrays = {k: place(v) for k, v in arrays.items()}
        x = place(self.x, self.dtype)
        step = _step(self._plan, {**arrays, "x": x, "y": y_buf}, self._sizes)
        return Launches(self.dev, [step], keep=(step[1], arrays, x))


# the GEMV paths besides float a case may time: path -> the ops of its product (the int8mma path of
# the super-block rows is gemv_int8mma_sub's, or gemv_int8frag_sub's with W in fragments)
GEMV_PATHS = {"pairs": ("gemv",), "int8dot": ("gemv_int8dot",), "int8mma": ("gemv_int8mma", "gemv_int8mma_sub"),
              "mma": ("gemv_mma",)}  # fmt: skip


class GemvPath:
    """qkgen's GEMV on `path` ("pairs", "int8dot", "int8mma", "mma"): the plans api.gemv_plans makes for it
    (the integer paths quantize x to q8_1 first; the mma path may round f32 x to f16 first), one
    set = all their launches. x_copy: what the first launch makes of x ("q8_1", "f16"; None where
    there is one launch), xq_bytes its size."""

    def __init__(self, dev, qt, x: np.ndarray, dtype: str, path: str):
        self._plans, self._sizes = api.gemv_plans(qt, x, path, dev.backend, dev.info.index)
        self.dev, self.qt, self.x, self.dtype, self.path = dev, qt, x, dtype, path
        self.shape = (self._sizes["N"], self._sizes["K"], self._sizes["M"])
        first = self._plans[0].spec
        self.x_copy = {"quantize_q8_1": "q8_1", "round_to_f16": "f16"}[first.name] if len(self._plans) > 1 else None
        copy_bytes = (o.count(self._sizes) * dtypes.get(o.dtype).size for o in first.outputs)
        self.xq_bytes = sum(copy_bytes) if self.x_copy else 0
        self.name = " + ".join(p.ks.name for p in self._plans)
        self.kernels = [{**(p.render_kw or {"op": p.ks.op, "format": p.ks.format, "dtype": p.ks.param("dtype")}),
                         "sha": p.ks.sha} for p in self._plans]  # fmt: skip

    @staticmethod
    def applies(qt, k: int, path: str, target, dtype: str, m: int) -> bool:
        """True when qt's format has this path, K fits it, (pairs) the row, x dtype and M take it
        there, and (int8mma, mma) the device has warp matrix instructions (elsewhere those paths go
        through local memory: correct, not fast)."""
        if not any(qt.format.name in get_op(op).formats() for op in GEMV_PATHS[path]):
            return False
        if path == "pairs":
            return pairs_apply(qt.format, dtype, target, m)
        if path == "mma":
            return target.mma
        return k % k_multiple(qt.format) == 0 and (path == "int8dot" or target.mma)

    def bind(self, y_buf, place=_host, like=None) -> Launches:
        dev = self.dev
        arrays, _ = api.weight_values(self.qt)
        arrays = {k: place(v) for k, v in arrays.items()}
        x = place(self.x, self.dtype)
        on_dev = self.qt.with_arrays(**arrays)  # holds this set's repacked copies (planes, fragments), if any
        arrays.update(api.repacked_arrays(on_dev, self._plans))
        keep: list = [arrays, x, on_dev]
        made: dict = {}  # the first launch's copy of x (q8_1 or f16) by name: it writes it, the product reads it
        steps = []
        for i, p in enumerate(self._plans):
            values = {**arrays, "x": x, "y": y_buf, **{k: ready(buf) for k, (buf, _, _) in made.items()}}
            if i < len(self._plans) - 1:
                made = p.outputs(self._sizes, like=like)
                keep.append(made)
                values.update({k: buf for k, (buf, _, _) in made.items()})
            steps.append(_step(p, values, self._sizes))
            keep.append(steps[-1][1])
        return Launches(dev, steps, keep=tuple(keep))


# ---- the public calls the host column times ----


def native_qtensor(qt, native):
    """qt with every array replaced by native(host array) (device copies for the public API)."""
    return qt.with_arrays(**{k: native(v) for k, v in qt.arrays().items()})


def default_gemv_path(dev, qt, m: int, dtype: str) -> str:
    """The path qkgen.gemv takes on dev when not told one."""
    return default_path(dev.target, qt.format, m, dtype, *qt.shape)


def gemv_call(qt_dev, x_dev, path: str, backend: str, device: Any):
    """() -> qkgen.gemv(qt_dev, x_dev, path=...), the public call on device arrays."""
    return lambda: api.gemv(qt_dev, x_dev, path=path, backend=backend, device=device)


def dequantize_call(qt_dev, dtype: str, backend: str, device: Any):
    """() -> qkgen.dequantize(qt_dev, dtype), the public call on device arrays."""
    return lambda: api.dequantize(qt_dev, dtype, backend=backend, device=device)


def ggml_type(fmt) -> str | None:
    """ggml's type name of a row stored in GGUF files (q4_0 -> "q4_0", q4_k -> "q4_K": qkgen's
    names are ggml's, lower-cased), None for other formats."""
    if fmt.gguf_type is None:
        return None
    return fmt.name[:-2] + "_K" if fmt.name.endswith("_k") else fmt.name


def render_kernel(dev, kwargs: dict):
    """The kernel source that `kwargs` (from a kernel object's render_kwargs) names, for dev's own
    target: what the compile-time processes compile. Returns (source object, name, sha)."""
    kw = dict(kwargs)
    ks = render(kw.pop("op"), kw.pop("format"), dev.target, **kw)
    return ks, ks.name, ks.sha
