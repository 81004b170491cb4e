"""The GEMV case (`--op gemv`): y = x @ W.T, W [N, K] quantized (--shapes NxK), x [M, K] (--m).

Rows per case: qkgen's float path (impl "qkgen", path "float"), qkgen's int8dot path for the GGUF
formats that have one (impl "qkgen int8dot", path "int8dot": quantize_q8_1 then gemv_int8dot, one
set = both launches), on devices with warp matrix instructions (CUDA sm_80+) the int8mma path for the
rows that have one (impl "qkgen int8mma": quantize_q8_1 then its product on W's blocks or fragments
layout, as runtime.paths says; the fragments copy made once per set, not timed) and the mma path
(impl "qkgen mma"), on CUDA with torch the baselines (bitsandbytes' 4-bit product for nf4/fp4,
the dense torch product), and with --llamacpp the llama.cpp row (test-backend-ops' MUL_MAT, hot).
Every set is fresh device copies of W (codes, statistics or dense), x and y; on CUDA with torch
they are torch tensors, so qkgen's launches go on torch's stream and are captured in CUDA graphs.
Every row's output is checked against the float64 product on sampled rows (CHECK_ROWS); a row over
harness.CHECK_REL_TOL is an error and posts no time. The host column times qkgen.gemv(qt, x) on
device arrays (QTensor arrays and x as torch / pyopencl / USM arrays).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np

from qkgen.errors import QKGenValueError

from . import baselines, llamacpp, qkgen_impl
from .byte_counts import gemv_bytes
from .cases import BenchOp, Case, Context, Impl, Spec, TimedSet, register
from .timing import HostCall

GEMV_DEFAULT_SHAPES = "4096x4096,8192x8192,14336x4096,4096x14336"  # N x K
GEMV_DEFAULT_FORMATS = "nf4:nested,nf4:plain,fp4:nested,q4_0,q4_1,q5_0,q8_0,int4:row,blockwise8"
CHECK_ROWS = 256  # output rows the check compares (evenly spaced, first and last included)


def gemv_x(seed: int, n_out: int, k: int, m: int, dtype: str) -> np.ndarray:
    """The activations x [M, K] as the kernels take them on the host (bf16: uint16 bits)."""
    x = np.random.default_rng([seed, n_out, k, m, 1]).standard_normal((m, k), dtype=np.float32)
    return np.ascontiguousarray(qkgen_impl.round_to(x, dtype) if dtype != "f32" else x)


def gemv_checker(x_host: np.ndarray, w: np.ndarray, dtype: str, rows: int = CHECK_ROWS):
    """check(y_flat) -> ||y - ref|| / ||ref|| on up to `rows` evenly spaced output rows (first and
    last included), ref the float64 product of x (as the kernel sees it) and the dequantized W."""
    n_out = w.shape[0]
    idx = np.unique(np.linspace(0, n_out - 1, min(n_out, rows)).round().astype(np.int64))
    xf = qkgen_impl.to_f32(x_host, dtype).astype(np.float64)
    ref = xf @ w[idx].astype(np.float64).T  # [M, len(idx)]
    norm = float(np.linalg.norm(ref)) or 1.0

    def check(y_flat: np.ndarray) -> float:
        got = np.asarray(y_flat, dtype=np.float64).reshape(xf.shape[0], n_out)[:, idx]
        if not np.all(np.isfinite(got)):
            return math.inf
        return float(np.linalg.norm(got - ref)) / norm

    return check


class GemvBench(BenchOp):
    name = "gemv"
    formula = ("packed codes + statistics + x (M * K * sizeof) + y (M * N * sizeof) (inputs read once, "
               "output written once); dense torch rows: W N * K * sizeof + x + y")  # fmt: skip
    default_shapes = GEMV_DEFAULT_SHAPES
    default_formats = GEMV_DEFAULT_FORMATS

    @staticmethod
    def _why_skip(fs, shape: tuple[int, ...]) -> str:
        if len(shape) != 2:
            raise QKGenValueError(f"--shapes: {'x'.join(map(str, shape))}; gemv takes NxK (W [N, K])")
        if fs.fmt.inline and shape[1] % fs.fmt.block:
            return f"K = {shape[1]} is not a multiple of {fs.fmt.name}'s block of {fs.fmt.block}"
        return ""

    def specs(self, sel: argparse.Namespace) -> list[Spec]:
        ms = getattr(sel, "ms", None) or [getattr(sel, "m", 1)]
        return [Spec(self.name, fs, dtype, shape, m=m) for fs in sel.formats for shape in sel.shapes
                if not self._why_skip(fs, shape) for m in ms for dtype in sel.dtypes]  # fmt: skip

    def skipped(self, sel: argparse.Namespace) -> list[str]:
        return [f"{fs.name} {fs.label} {'x'.join(map(str, s))}: {why}"
                for fs in sel.formats for s in sel.shapes if (why := self._why_skip(fs, s))]  # fmt: skip

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        dev, dtype, m = ctx.dev, spec.dtype, spec.m or 1
        n_out, k = spec.shape
        qt = ctx.host_qtensor(spec)
        nbytes, formula = gemv_bytes(qt, m, dtype)
        x = gemv_x(ctx.args.seed, n_out, k, m, dtype)
        # f32 [N, K], the values every impl multiplies
        w = ctx.derived(spec, "dequantized", qkgen_impl.dequantize_host)
        check = gemv_checker(x, w, dtype)
        try:
            float_kernel = qkgen_impl.GemvFloat(dev, qt, x, dtype, ctx.args.device)
        except QKGenValueError as e:
            raise QKGenValueError(f"--shapes: {e}") from None

        def y_output(y) -> Callable[[], np.ndarray]:
            return lambda: qkgen_impl.to_f32(np.asarray(dev.download(y, dtype, m * n_out)), dtype)

        def bound_set(kernel) -> Callable[[], TimedSet]:
            def make() -> TimedSet:
                y_buf, y = dev.empty(m * n_out, dtype, like=ctx.like)
                extra = {"like": ctx.like} if isinstance(kernel, qkgen_impl.GemvPath) else {}
                launches = kernel.bind(y_buf, ctx.place, **extra)
                return TimedSet(run=launches.time_ms, output=y_output(y), keep=(launches, y_buf, y),
                                launch=launches.launch)  # fmt: skip

            return make

        host, host_note = self._host(ctx, qt, x, dtype)
        default = qkgen_impl.default_gemv_path(dev, qt, m, dtype)
        impls = [Impl("qkgen", bound_set(float_kernel), kernel=float_kernel.name, path="float", check=check,
                      host=host("float"), host_note=host_note, default=default == "float")]  # fmt: skip
        extra: list[dict] = []
        for path in qkgen_impl.GEMV_PATHS:
            if not qkgen_impl.GemvPath.applies(qt, k, path, dev.target, dtype, m):
                continue
            try:
                kern = qkgen_impl.GemvPath(dev, qt, x, dtype, path)
            except QKGenValueError as e:  # a shape this path does not take (K): the other rows still run
                ctx.note_once(f"no qkgen {path} row for {qt.format.name} {n_out}x{k}: {e}")
                continue
            note = f"time = {len(kern.kernels)} launch{'es' if len(kern.kernels) > 1 else ''}"
            if kern.x_copy:
                note += f"; the {kern.x_copy} copy of x ({kern.xq_bytes} B written and read) is not counted"
            if path == "mma":
                note += "; W rounded to x's 16-bit type (f16 for f32 x)"
            if path == "pairs":
                note += "; products in x's 16-bit type, 4 added there before f32"
            impls.append(Impl(f"qkgen {path}", bound_set(kern), kernel=kern.name, path=path, note=note,
                              check=check, host=host(path), host_note=host_note, default=default == path))  # fmt: skip
            extra += kern.kernels
        if qt.format.inline and not qkgen_impl.int8dot_formats():
            ctx.note_once("qkgen's int8dot path is not in this build (no quantize_q8_1 / gemv_int8dot "
                          "kernels): no int8dot rows")  # fmt: skip
        if not dev.target.mma:
            ctx.note_once("no int8mma or mma rows: this device has no warp matrix instructions (those "
                          "paths run through local memory there: correct, not fast)")  # fmt: skip
        impls += baselines.gemv_impls(ctx, qt, x, w, dtype, check)
        impls += llamacpp_impls(ctx, qt, spec)
        return Case(spec, nbytes, formula, impls, render_kwargs=float_kernel.render_kwargs,
                    kernel_sha=float_kernel.sha, extra_kernels=extra)  # fmt: skip

    @staticmethod
    def _host(ctx: Context, qt, x: np.ndarray, dtype: str):
        """(path -> factory of the host column's public call qkgen.gemv(qt, x) on device arrays, or
        None; why there is none)."""
        probe = ctx.native(x[:1], dtype)
        if probe is None:
            why = "no device arrays (CUDA without torch)"
            if dtype == "bf16" and ctx.dev.backend != "cuda":
                why = "bf16 activations cannot be passed to qkgen.gemv as an OpenCL/SYCL device array"
            return (lambda path: None), why
        del probe

        def factory(path: str):
            def make() -> HostCall:
                qt_dev = qkgen_impl.native_qtensor(qt, ctx.native)
                x_dev = ctx.native(x, dtype)
                call = qkgen_impl.gemv_call(qt_dev, x_dev, path, ctx.dev.backend, ctx.args.device)
                return HostCall(call, ctx.sync, f"qkgen.gemv(qt, x, path={path!r}) on device arrays",
                                keep=(qt_dev, x_dev))  # fmt: skip

            return make

        return factory, ""


def llamacpp_impls(ctx: Context, qt, spec: Spec) -> list[Impl]:
    """The llama.cpp row of (format, N x K, M) with --llamacpp: once per run, beside the first dtype's
    case; its activations are f32 (test-backend-ops' type_b=f32)."""
    a = ctx.args
    type_a = qkgen_impl.ggml_type(qt.format)
    if not a.llamacpp or type_a is None:
        return []
    n_out, k = spec.shape
    m = spec.m or 1
    key = (type_a, n_out, m, k)
    if ("shown", key) in ctx.llamacpp:
        return []
    ctx.llamacpp[("shown", key)] = True
    backend = a.llamacpp_backend or llamacpp.default_backend(ctx.dev.backend, ctx.dev.info.index)

    def fixed() -> dict:  # run by the harness, so a failure is the llama.cpp row's error alone
        if key not in ctx.llamacpp:
            ctx.llamacpp[key] = llamacpp.run(a.llamacpp, backend, type_a, n_out, m, k)
        return ctx.llamacpp[key]

    nbytes, formula = gemv_bytes(qt, m, "f32")
    kernel = f"test-backend-ops MUL_MAT({llamacpp.params_prefix(type_a, n_out, m, k)}...)"
    return [Impl("llama.cpp", None, kernel=kernel, bytes=nbytes, formula=formula, fixed=fixed, dtype="f32")]


register(GemvBench())
