"""The case registry: what an op must provide to be benchmarked, and the context it gets.

An op name maps to a ``BenchOp`` that lists the cases a selection asks for (``specs``) and, for
one case, makes the ``Case``: its byte count and formula and one ``Impl`` per implementation
(qkgen, then baselines such as bitsandbytes). An Impl allocates one input/output set at a time
(``make_set``) and returns a ``TimedSet`` whose ``run()`` launches once and returns device
milliseconds. The harness does the rotation, the warm-up and the median, so an op never times
anything itself.

Adding an op is one module with one class and one line::

    class GemvBench(BenchOp):
        name = "gemv"
        formula = "packed codes + statistics + x (K * sizeof) + y (M * sizeof)"
        def specs(self, sel): ...              # usually: default_specs(self.name, sel)
        def prepare(self, ctx, spec): ...      # ctx.host_qtensor(spec) gives the quantized
                                               # weights; return Case(..., impls=[...])
    register(GemvBench())                      # CASES["gemv"]; `--op gemv` then works

and an import of that module in this package's ``__init__``. ``dequantize_case`` is the worked
example; ``gemv_case`` uses the optional parts: per-op default shapes/formats, ``skipped()``, an
Impl's own ``bytes``/``formula`` (dense torch), ``path`` and ``check`` (output -> relative error
vs a reference), ``Case.extra_kernels`` (more kernels for compile timing) and ``Impl.fixed``
(a row measured elsewhere: llama.cpp's test-backend-ops).
"""

from __future__ import annotations

import argparse
import gc
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import qkgen_impl
from .timing import choose_method

if TYPE_CHECKING:
    from .options import FormatSel

DEFAULT_SHAPES = "4096x4096,8192x8192,4096x14336"
DEFAULT_FORMATS = "nf4:nested,fp4:nested,blockwise8,q4_0,q8_0,int4:row"
DEFAULT_DTYPES = "bf16,f16"


@dataclass(frozen=True)
class Spec:
    """One bench case before anything is allocated."""

    op: str
    sel: FormatSel
    dtype: str
    shape: tuple[int, ...]
    m: int | None = None  # gemv: rows of x

    @property
    def shape_str(self) -> str:
        return "x".join(map(str, self.shape))


def default_specs(op: str, sel: argparse.Namespace) -> list[Spec]:
    """Every format x shape x dtype of the selection, dtype innermost (quantized data is reused)."""
    specs = []
    for fs in sel.formats:
        for shape in sel.shapes:
            n = math.prod(shape)
            if fs.fmt.inline and n % fs.fmt.block:
                continue  # GGUF needs whole blocks; reported in skipped
            for dtype in sel.dtypes:
                specs.append(Spec(op, fs, dtype, shape))
    return specs


@dataclass
class TimedSet:
    """One allocated input/output set. launch() enqueues it once without waiting and returns its
    launches' events (OpenCL/SYCL) or None (CUDA: captured into a graph); run() launches once
    between two device events and returns milliseconds (the labelled fallback timer)."""

    run: Callable[[], float]
    output: Callable[[], np.ndarray] | None = None  # host f32 copy of the result (checks)
    keep: Any = None  # whatever must stay alive while the set is used
    launch: Callable[[], Any] | None = None


@dataclass
class Impl:
    impl: str  # "qkgen", "bnb", ...
    make_set: Callable[[], TimedSet] | None
    kernel: str = ""  # kernel or function name, for the report
    note: str = ""
    path: str = ""  # gemv: the qkgen path ("float", "int8dot")
    default: bool = False  # the qkgen row the public call takes when not told (runtime.paths)
    bytes: int | None = None  # bytes one launch moves when they differ from the case's (dense torch)
    formula: str = ""  # ... and their formula
    check: Callable[[np.ndarray], float] | None = None  # output -> relative error vs a reference
    host: Callable[[], Any] | None = None  # -> timing.HostCall: the public call of the host column
    host_note: str = ""  # why there is no host column where host is None
    fixed: Callable[[], dict] | None = None  # a row measured elsewhere (llama.cpp): -> its figures
    dtype: str = ""  # the row's dtype where it is not the case's (llama.cpp: f32 activations)


@dataclass
class Case:
    spec: Spec
    bytes: int  # bytes one launch must move
    formula: str  # how `bytes` is counted, with the numbers
    impls: list[Impl]
    render_kwargs: dict | None = None  # the qkgen kernel, for compile timing
    kernel_sha: str = ""  # its source hash: the compile-time processes must render the same source
    extra_kernels: list[dict] = field(default_factory=list)  # more kernels (render kwargs + "sha")


class BenchOp:
    """A benchmarked op: subclass, set name/formula, implement specs() and prepare(), register()."""

    name = ""
    formula = ""  # the op's byte formula in words, printed in the report header
    default_shapes = DEFAULT_SHAPES  # --shapes / --formats when not given
    default_formats = DEFAULT_FORMATS

    def specs(self, sel: argparse.Namespace) -> list[Spec]:
        return default_specs(self.name, sel)

    def skipped(self, sel: argparse.Namespace) -> list[str]:
        """Format x shape pairs the selection names but specs() leaves out, with the reason."""
        return [f"{fs.name} {fs.label} {'x'.join(map(str, s))}: {math.prod(s)} elements is not a multiple of "
                f"{fs.fmt.block}" for fs in sel.formats for s in sel.shapes
                if fs.fmt.inline and math.prod(s) % fs.fmt.block]  # fmt: skip

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        raise NotImplementedError


CASES: dict[str, BenchOp] = {}


def register(op: BenchOp) -> BenchOp:
    CASES[op.name] = op
    return op


# run options a Context fills in where a caller's args lack them (tests build small Namespaces)
RUN_DEFAULTS = {"modes": ("cold", "hot"), "launches": 100, "host_calls": 200, "timing": "auto",
                "llamacpp": None, "llamacpp_backend": None, "no_bnb": True}  # fmt: skip


class Context:
    """What cases draw on: the device, torch / bitsandbytes when present (CUDA), the run's timing
    method, notes for the report, and the host data quantized once per format and shape."""

    def __init__(self, dev, args: argparse.Namespace):
        for k, v in RUN_DEFAULTS.items():
            if not hasattr(args, k):
                setattr(args, k, v)
        self.dev = dev
        self.args = args
        self.notes: list[str] = []
        self._qt_key: tuple | None = None
        self._qt = None
        self._derived: dict = {}
        self.torch = None
        self.torch_device = None
        self.bnb = None
        self.llamacpp: dict = {}  # (type, m, n, k) -> result, and the cases that have shown one
        if dev.backend == "cuda":
            from .peers import find_torch

            self.torch, self.torch_device, self.bnb = find_torch(dev, args.no_bnb, self.notes)
        self.timing, self.timing_note = choose_method(args.timing, dev.backend, self.torch_cuda)

    @property
    def torch_cuda(self) -> bool:
        """torch drives this CUDA device: sets hold torch tensors, timing captures CUDA graphs."""
        return self.dev.backend == "cuda" and self.torch is not None and self.torch.cuda.is_available()

    def sync(self) -> None:
        """Wait for everything enqueued on the device (qkgen's queue, and torch's streams)."""
        self.dev.synchronize()
        if self.torch is not None and self.torch.cuda.is_available():
            self.torch.cuda.synchronize()

    def native(self, host: np.ndarray, dtype: str | None = None) -> Any:
        """A fresh device copy of a host array, as the public API takes device arrays: a torch CUDA
        tensor (CUDA with torch; dtype "bf16": bfloat16 from uint16 bits), a pyopencl array, a SYCL
        USM array; None where there is none (bf16 activations on OpenCL/SYCL, CUDA without torch)."""
        host = np.ascontiguousarray(host)
        if self.torch_cuda:
            t = self.torch.from_numpy(host.view(np.int16) if dtype == "bf16" else host)
            t = t.view(self.torch.bfloat16) if dtype == "bf16" else t
            return t.to(self.torch_device, copy=True)
        if dtype == "bf16" or self.dev.backend == "cuda":
            return None
        if self.dev.backend == "opencl":
            import pyopencl.array as cla

            return cla.to_device(self.dev.queue, host)
        return self.dev.to_device(host)

    def place(self, host: np.ndarray, dtype: str | None = None) -> Any:
        """What a timed set binds: torch tensors on CUDA with torch (so launches go on torch's
        stream and are captured), else the host array itself (binding uploads a fresh buffer)."""
        return self.native(host, dtype) if self.torch_cuda else host

    @property
    def like(self) -> Any:
        """An array outputs are allocated like (dev.empty(like=...)): a torch tensor on CUDA with torch."""
        return self.torch.empty(0, device=self.torch_device) if self.torch_cuda else None

    def host_qtensor(self, spec: Spec):
        """The spec's data quantized (host arrays; on the device where its quantizer takes the
        format, the reference codec's bytes); reused while consecutive specs share format and shape."""
        key = (spec.sel, spec.shape)
        if key != self._qt_key:
            self.release()
            rng = np.random.default_rng([self.args.seed, *spec.shape])
            x = rng.standard_normal(spec.shape, dtype=np.float32)
            self._qt = qkgen_impl.quantize_for_case(x, spec.sel.name, self.dev.backend, self.args.device,
                                                    **spec.sel.quantize_kwargs())  # fmt: skip
            self._qt_key = key
        return self._qt

    def release(self) -> None:
        """Drop the cached host data (before the next format or shape, and after the run)."""
        self._qt = self._qt_key = None
        self._derived = {}
        gc.collect()

    def note_once(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def derived(self, spec: Spec, name: str, make: Callable[[Any], Any]) -> Any:
        """make(qtensor) for the spec's host qtensor (e.g. its dequantized weights), cached as
        long as the qtensor is."""
        qt = self.host_qtensor(spec)
        if name not in self._derived:
            self._derived[name] = make(qt)
        return self._derived[name]
