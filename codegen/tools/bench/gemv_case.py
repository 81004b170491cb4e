"""The GEMV case (`--op gemv`): y = x @ W.T, W [N, K] quantized (--shapes NxK), x [M, K] (--m).

Rows per case: qkgen's float path (impl "qkgen", path "float"), qkgen's int8dot path for the GGUF
formats that have one (impl "qkgen int8dot", path "int8dot"; its time is the sum of the
quantize_q8_1 and gemv_int8dot launches, each timed with device events), and on CUDA with torch
the baselines (bitsandbytes' 4-bit product for nf4/fp4, the dense torch product). Every set is
fresh device copies of W (codes, statistics or dense), x and y. Every row's output is checked
against the float64 product on sampled rows (CHECK_ROWS); a row over CHECK_REL_TOL is an error
and posts no time.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np

from qkgen.errors import QKGenValueError

from . import baselines, qkgen_impl
from .byte_counts import gemv_bytes
from .cases import BenchOp, Case, Context, Impl, Spec, TimedSet, register
from .harness import CHECK_REL_TOL
from .report import fmt_num

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
        m = getattr(sel, "m", 1)
        return [Spec(self.name, fs, dtype, shape, m=m) for fs in sel.formats for shape in sel.shapes
                if not self._why_skip(fs, shape) for dtype in sel.dtypes]  # fmt: skip

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
                y_buf, y = dev.empty(m * n_out, dtype)
                launches = kernel.bind(y_buf)
                return TimedSet(run=launches.time_ms, output=y_output(y), keep=(launches, y_buf, y))

            return make

        impls = [Impl("qkgen", bound_set(float_kernel), kernel=float_kernel.name, path="float", check=check)]
        extra: list[dict] = []
        if qkgen_impl.GemvInt8dot.applies(qt, k):
            i8 = qkgen_impl.GemvInt8dot(dev, qt, x, dtype)
            note = (f"time = quantize_q8_1 + gemv_int8dot launches; the q8_1 copy of x ({i8.xq_bytes} B "
                    "written and read) is not counted")  # fmt: skip
            impls.append(Impl("qkgen int8dot", bound_set(i8), kernel=i8.name, path="int8dot", note=note,
                              check=check))  # fmt: skip
            extra += i8.kernels
        elif qt.format.inline and not qkgen_impl.int8dot_formats():
            ctx.note_once("qkgen's int8dot path is not in this build (no quantize_q8_1 / gemv_int8dot "
                          "kernels): no int8dot rows")  # fmt: skip
        impls += baselines.gemv_impls(ctx, qt, x, w, dtype, check)
        return Case(spec, nbytes, formula, impls, render_kwargs=float_kernel.render_kwargs,
                    kernel_sha=float_kernel.sha, extra_kernels=extra)  # fmt: skip

    def markdown_table(self, rows: list[dict]) -> tuple[list[str], list[str]]:
        head = ["format", "variant", "dtype", "N x K", "M", "impl", "path", "kernel", "MB moved", "sets",
                "µs", "GB/s", "% copy", "check (rel err)", "time / qkgen float"]  # fmt: skip
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        errors: list[str] = []
        qk = {(r["format"], r["variant"], r["dtype"], r["shape"]): r for r in rows
              if r["impl"] == "qkgen" and r["status"] == "ok"}  # fmt: skip
        for r in rows:
            key = (r["format"], r["variant"], r["dtype"], r["shape"])
            chk = "-" if r["rel_err"] is None else f"{r['check']} ({r['rel_err']:.2g})"
            if r["status"] == "ok":
                q = qk.get(key)
                sp = (f"{r['us_median'] / q['us_median']:.2f}x" if q is not None and r["impl"] != "qkgen"
                      else "-")  # fmt: skip
                nums = [fmt_num(r["us_median"], ".1f"), fmt_num(r["gbps"], ".1f"),
                        fmt_num(r["pct_copy"], ".1f"), chk, sp]  # fmt: skip
            else:
                errors.append(f"{r['impl']} {r['format']} {r['variant']} {r['dtype']} {r['shape']}: "
                              f"{r['error']}")  # fmt: skip
                nums = ["error", "-", "-", chk, "-"]
            kernel = f"`{r['kernel']}`" if r["kernel"] else "-"
            cells = [*key[:4], "-" if r["m"] is None else str(r["m"]), r["impl"], r["path"] or "-", kernel,
                     f"{r['bytes'] / 1e6:.2f}", str(r["sets"] or "-"), *nums]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "time / qkgen float = the row's µs over the qkgen float row's µs (> 1: qkgen float "
                      f"is faster); check = ||y - y_ref|| / ||y_ref|| on up to {CHECK_ROWS} rows of y, y_ref "
                      f"the float64 product of x and the dequantized W; allowed < {CHECK_REL_TOL:g}."]
        return lines, errors


register(GemvBench())
