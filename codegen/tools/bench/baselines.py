"""Baselines beside qkgen: bitsandbytes (dequantize_4bit / dequantize_blockwise, matmul_4bit,
gemv_4bit) and the dense torch product, on torch's CUDA device. Their sets' launch() is the plain
call, which the harness captures into CUDA graphs like qkgen's launches; the host column times the
same public call back to back.

Every set is fresh device copies of the same host data qkgen's rows use, so each row moves the
same bytes; outputs come back as host float32 for the harness's comparison and checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from qkgen.errors import QKGenValueError

from . import qkgen_impl
from .cases import Context, Impl, TimedSet
from .byte_counts import dense_gemv_bytes
from .timing import HostCall

NESTED_NOTE = "nested: bnb dequantizes absmax in a separate kernel first"


def torch_dtype(torch, dtype: str):
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dtype]


def torch_event_timer(torch, fn: Callable[[], Any]) -> Callable[[], float]:
    """run() -> milliseconds of one fn() call between two CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run() -> float:
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    return run


def _bnb_on(torch, qt, dtype: str, device):
    """(packed codes, QuantState) of qt as bitsandbytes holds them, fresh copies on `device`, the
    state's output dtype `dtype` (qt.to_bnb() is the one description of bnb's layout)."""
    packed, state = qt.to_bnb()
    state.dtype = torch_dtype(torch, dtype)
    state.to(device)
    return packed.to(device, copy=True), state


def bnb_dequantize_fn(bnbf, torch, qt, dtype: str, device) -> tuple[Callable[[], Any], Any]:
    """(call, keep-alive) running bitsandbytes' dequantize of qt's data on `device` (the function
    the format's family names), into a preallocated output where the device has bnb's `out=`
    kernel. call() returns the output tensor."""
    fname = qkgen_impl.bnb_function(qt.format, "dequantize")
    if fname is None:
        raise QKGenValueError(f"format: {qt.format.name} has no bitsandbytes kernel")
    packed, state = _bnb_on(torch, qt, dtype, device)
    fn = getattr(bnbf, fname.rpartition(".")[2])
    # the shape bnb checks `out` against: dequantize_blockwise's is its code array's (one code a
    # byte, flat here), dequantize_4bit's the weight's
    shape = tuple(packed.shape) if fname.endswith("dequantize_blockwise") else qt.shape
    out = torch.empty(shape, dtype=state.dtype, device=device)
    mode = {"out": True}

    def call():
        if mode["out"]:
            try:
                return fn(packed, state, out=out)
            except NotImplementedError:  # e.g. bnb's CPU backend has no `.out` kernel
                mode["out"] = False
        return fn(packed, state)

    return call, (state, packed, out)


def bnb_gemv_fn(bnb, bnbf, torch, qt, x_host: np.ndarray, dtype: str, device,
                fn: str = "matmul_4bit") -> tuple[Callable[[], Any], Any]:  # fmt: skip
    """(call, keep-alive) running bitsandbytes' 4-bit product y = x @ W.T on `device` from fresh
    device copies of qt (packed [(N*K+1)//2, 1] codes and its QuantState) and x [M, K]:

      fn "matmul_4bit": bitsandbytes.matmul_4bit(x, W.t(), quant_state=state), the public call
        (bnb 0.50: torch.ops.bitsandbytes.gemm_4bit, which for M <= 4 runs the fused cgemm_4bit
        kernel, nested absmax decoded inside it);
      fn "gemv_4bit": bitsandbytes.functional.gemv_4bit(x, W, state=state), the M = 1 kernel
        (cgemm_4bit_inference_naive; nested absmax first dequantized by a separate kernel).

    call() returns y [M, N] in x's dtype."""
    if qkgen_impl.bnb_function(qt.format, "matmul") is None:
        raise QKGenValueError(f"format: {qt.format.name} has no bitsandbytes 4-bit product")
    packed, state = _bnb_on(torch, qt, dtype, device)
    x = torch.from_numpy(qkgen_impl.to_f32(x_host, dtype)).to(device=device, dtype=torch_dtype(torch, dtype))
    if fn == "matmul_4bit":
        call = lambda: bnb.matmul_4bit(x, packed.t(), quant_state=state)  # noqa: E731
    elif fn == "gemv_4bit":
        if x.shape[0] != 1:
            raise QKGenValueError(f"gemv_4bit: M = {x.shape[0]}; it computes one row (M = 1)")
        call = lambda: bnbf.gemv_4bit(x, packed, state=state)  # noqa: E731
    else:
        raise QKGenValueError(f"fn: {fn!r}; allowed: matmul_4bit, gemv_4bit")
    return call, (state, packed, x)


def _torch_set(torch, call: Callable[[], Any], keep: Any) -> TimedSet:
    """A set whose launch() is call() (captured into CUDA graphs as it is), whose run() times one
    call with CUDA events, and whose output is the result of its latest eager call."""
    box: dict[str, Any] = {}

    def fn():
        box["out"] = call()

    return TimedSet(run=torch_event_timer(torch, fn), keep=keep, launch=fn,
                    output=lambda: box["out"].float().reshape(-1).cpu().numpy())  # fmt: skip


def torch_sync(torch) -> Callable[[], None]:
    return torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)


def _host_call(torch, call: Callable[[], Any], keep: Any, text: str) -> HostCall:
    return HostCall(call, torch_sync(torch), text, keep=keep)


def dequantize_impls(ctx: Context, qt, dtype: str) -> list[Impl]:
    """The bitsandbytes dequantize row for qt, where bnb is usable and has a kernel for its format."""
    fname = qkgen_impl.bnb_function(qt.format, "dequantize")
    if ctx.bnb is None or fname is None:
        return []
    torch, bnbf, tdev = ctx.torch, ctx.bnb, ctx.torch_device

    def bnb_set() -> TimedSet:
        return _torch_set(torch, *bnb_dequantize_fn(bnbf, torch, qt, dtype, tdev))

    def host() -> HostCall:
        return _host_call(torch, *bnb_dequantize_fn(bnbf, torch, qt, dtype, tdev), f"bitsandbytes.{fname}")

    note = NESTED_NOTE if qt.nested else ""
    return [Impl("bnb", bnb_set, kernel=f"bitsandbytes.{fname}", note=note, host=host)]


def gemv_impls(ctx: Context, qt, x: np.ndarray, w: np.ndarray, dtype: str,
               check: Callable[[np.ndarray], float]) -> list[Impl]:  # fmt: skip
    """Rows beside qkgen's GEMV on CUDA with torch: bitsandbytes' 4-bit product for nf4/fp4 ("bnb":
    matmul_4bit; "bnb gemv_4bit": functional.gemv_4bit, M = 1) and the dense product
    torch.matmul(x, Wd.t()) with Wd = w, the dequantized W, in the case dtype ("torch")."""
    torch, tdev = ctx.torch, ctx.torch_device
    m, (n_out, k) = x.shape[0], qt.shape
    impls: list[Impl] = []
    if ctx.dev.backend != "cuda":
        ctx.note_once("bitsandbytes and dense torch rows run on the CUDA backend only")
    if ctx.bnb is not None and qkgen_impl.bnb_function(qt.format, "matmul"):
        import bitsandbytes as bnb

        for fn, impl_name in (("matmul_4bit", "bnb"), ("gemv_4bit", "bnb gemv_4bit")):
            if fn == "gemv_4bit" and m != 1:
                continue

            def bnb_set(fn=fn) -> TimedSet:
                return _torch_set(torch, *bnb_gemv_fn(bnb, ctx.bnb, torch, qt, x, dtype, tdev, fn=fn))

            def host(fn=fn) -> HostCall:
                call, keep = bnb_gemv_fn(bnb, ctx.bnb, torch, qt, x, dtype, tdev, fn=fn)
                return _host_call(torch, call, keep, "bitsandbytes.matmul_4bit" if fn == "matmul_4bit"
                                  else "bitsandbytes.functional.gemv_4bit")

            if fn == "matmul_4bit":
                kname, note = "bitsandbytes.matmul_4bit(x, W.t(), quant_state=state)", ""
            else:
                kname = "bitsandbytes.functional.gemv_4bit(x, W, state=state)"
                note = NESTED_NOTE if qt.nested else ""
            impls.append(Impl(impl_name, bnb_set, kernel=kname, note=note, check=check, host=host))
    if torch is not None:
        dbytes, dformula = dense_gemv_bytes(n_out, k, m, dtype)
        tdt = torch_dtype(torch, dtype)
        base: dict[str, Any] = {}

        def torch_set() -> TimedSet:
            if "w" not in base:  # one upload per case, then device-to-device clones per set
                base["w"] = torch.from_numpy(w).to(device=tdev, dtype=tdt)
                base["x"] = torch.from_numpy(qkgen_impl.to_f32(x, dtype)).to(device=tdev, dtype=tdt)
            wd, xt = base["w"].clone(), base["x"].clone()
            y = torch.empty((m, n_out), dtype=tdt, device=tdev)
            fn = lambda: torch.matmul(xt, wd.t(), out=y)  # noqa: E731
            out = lambda: y.float().reshape(-1).cpu().numpy()  # noqa: E731
            return TimedSet(run=torch_event_timer(torch, fn), output=out, keep=(wd, xt, y), launch=fn)

        def host() -> HostCall:
            s = torch_set()
            wd, xt, _ = s.keep
            return _host_call(torch, lambda: torch.matmul(xt, wd.t()), s.keep, "torch.matmul(x, Wd.t())")

        impls.append(Impl("torch", torch_set, kernel=f"torch.matmul(x, Wd.t()) dense {dtype}",
                          note=f"Wd: the dequantized W, dense {dtype}", bytes=dbytes, formula=dformula,
                          check=check, host=host))  # fmt: skip
    return impls
