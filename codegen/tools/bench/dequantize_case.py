"""The dequantize case (`--op dequantize`, the default): qkgen's kernel, then bitsandbytes'.

qkgen's row is checked against the reference codec (its output rounded to the dtype): the check's
relative error is 0 when the kernel is bit-exact. The host column times qkgen.dequantize(qt) with
qt's arrays on the device.
"""

from __future__ import annotations

import numpy as np

from . import baselines, qkgen_impl
from .byte_counts import dequantize_bytes
from .cases import BenchOp, Case, Context, Impl, Spec, TimedSet, register
from .timing import HostCall


def reference_checker(want: np.ndarray):
    """check(out) -> 0.0 when out equals `want` bit for bit (NaN = NaN), else ||out - want|| / ||want||."""

    def check(got: np.ndarray) -> float:
        got = np.asarray(got, dtype=np.float32).reshape(-1)
        if np.array_equal(got, want, equal_nan=True):
            return 0.0
        if not np.all(np.isfinite(got[np.isfinite(want)])):
            return float("inf")
        d = np.nan_to_num(got.astype(np.float64) - want)
        return float(np.linalg.norm(d) / (np.linalg.norm(np.nan_to_num(want.astype(np.float64))) or 1.0))

    return check


class DequantizeBench(BenchOp):
    name = "dequantize"
    formula = "packed codes + statistics + n * sizeof(dtype) (inputs read once, output written once)"

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        dev, dtype = ctx.dev, spec.dtype
        qt = ctx.host_qtensor(spec)
        nbytes, formula = dequantize_bytes(qt, dtype)
        kernel = qkgen_impl.Dequantize(dev, qt, dtype, ctx.args.device)
        want = ctx.derived(spec, f"reference {dtype}", lambda q: qkgen_impl.to_f32(
            qkgen_impl.round_to(qkgen_impl.dequantize_host(q), dtype), dtype).reshape(-1))

        def qkgen_set() -> TimedSet:
            out_buf, out = dev.empty(qt.n, dtype, like=ctx.like)
            launches = kernel.bind(out_buf, ctx.place)
            return TimedSet(
                run=launches.time_ms,
                output=lambda: qkgen_impl.to_f32(np.asarray(dev.download(out, dtype, qt.n)), dtype),
                keep=(launches, out_buf, out),
                launch=launches.launch,
            )  # fmt: skip

        def host() -> HostCall:
            qt_dev = qkgen_impl.native_qtensor(qt, ctx.native)
            call = qkgen_impl.dequantize_call(qt_dev, dtype, dev.backend, ctx.args.device)
            return HostCall(call, ctx.sync, f"qkgen.dequantize(qt, {dtype!r}) on device arrays", keep=qt_dev)

        native = ctx.torch_cuda or dev.backend != "cuda"
        impls = [Impl("qkgen", qkgen_set, kernel=kernel.name, check=reference_checker(want), default=True,
                      host=host if native else None,
                      host_note="" if native else "no device arrays (CUDA without torch)")]  # fmt: skip
        impls += baselines.dequantize_impls(ctx, qt, dtype)
        return Case(spec, nbytes, formula, impls, render_kwargs=kernel.render_kwargs, kernel_sha=kernel.sha)


register(DequantizeBench())
