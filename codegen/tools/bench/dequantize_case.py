"""The dequantize case (`--op dequantize`, the default): qkgen's kernel, then bitsandbytes'."""

from __future__ import annotations

import numpy as np

from . import baselines, qkgen_impl
from .byte_counts import dequantize_bytes
from .cases import BenchOp, Case, Context, Impl, Spec, TimedSet, register


class DequantizeBench(BenchOp):
    name = "dequantize"
    formula = "packed codes + statistics + n * sizeof(dtype) (inputs read once, output written once)"

    def prepare(self, ctx: Context, spec: Spec) -> Case:
        dev = ctx.dev
        qt = ctx.host_qtensor(spec)
        nbytes, formula = dequantize_bytes(qt, spec.dtype)
        kernel = qkgen_impl.Dequantize(dev, qt, spec.dtype, ctx.args.device)

        def qkgen_set() -> TimedSet:
            out_buf, out = dev.empty(qt.n, spec.dtype)
            launches = kernel.bind(out_buf)
            return TimedSet(
                run=launches.time_ms,
                output=lambda: qkgen_impl.to_f32(np.asarray(dev.download(out, spec.dtype, qt.n)), spec.dtype),
                keep=(launches, out_buf, out),
            )  # fmt: skip

        impls = [Impl("qkgen", qkgen_set, kernel=kernel.name)]
        impls += baselines.dequantize_impls(ctx, qt, spec.dtype)
        return Case(spec, nbytes, formula, impls, render_kwargs=kernel.render_kwargs, kernel_sha=kernel.sha)


register(DequantizeBench())
