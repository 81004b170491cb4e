"""The Python API: run kernels on a device (quantize, the reference codec or on a device: runtime.quantize).

The first call of a kind (weight, device, x's type, dtype and shape, options) validates its input,
takes launch plans for the device's own target (rendering and compiling are cached) and binds them
into a Bound kept on the weight; a warm call is one dict lookup, x's device/layout checks, the
output allocation and the launches (issue 11: host time per call). Device arrays in give device
arrays out without copies; numpy in gives numpy out (bf16 as uint16 bit patterns).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import QKGenValueError
from ..formats import QTensor, family_of, get, validate
from ..formats import reference as ref
from ..kernels.ops import MAX_M, get_op
from ..kernels.ops.gemv import require_pairs
from ..kernels.ops.int8dot import ACT as INT8DOT_ACT
from ..kernels.ops.int8dot import X_LAYOUTS, k_multiple, q8_1_sizes
from ..kernels.ops.int8frag import frag_planes
from ..kernels.ops.int8frag_sub import frag_sub_bytes
from ..kernels.ops.round_f16 import MAX_VALUES as ROUND_MAX_VALUES
from ..formats.layout import check_layout
from .paths import (default_int8mma_layout, default_lane_group, default_layout, default_path, default_round_x,
                    default_x_planes, float_knobs, int8frag_knobs, mma_knobs, pairs_knobs)
from .plan import Bound, Plan, ready

# Kernels take sizes (rows, columns) as 32-bit arguments and index elements with 64-bit offsets: a
# tensor may pass 2^32 elements, up to what the device can allocate (the backend checks that).
MAX_DIM = 2**32 - 1
PATHS = ("float", "int8dot", "int8mma", "mma", "pairs")
_CALLS = "_qkgen_calls"  # a QTensor's own cache of bound calls
_PLANES = "_qkgen_planes"  # a QTensor's own cache of its planes layout, per device
_FRAGMENTS = "_qkgen_fragments"  # and of its fragments layout (the int8mma path's, ops/int8frag.py)
_NO_INPUTS: dict = {}
# $QKGEN_BACKEND is part of every call's cache key: read from os.environ's own dict (os.environ.get
# encodes the key and goes through Mapping.get, about 1 us a call).
_env_get = getattr(os.environ, "_data", os.environ).get
_ENV_KEY = getattr(os.environ, "encodekey", str)("QKGEN_BACKEND")


def dtype_name(dtype: Any) -> str:
    """'f32' | 'f16' | 'bf16' from a name, a numpy dtype or a torch dtype."""
    return dtypes.float_dtype(dtype)


_DEVICES: dict[tuple, Any] = {}


def _open(backend: str | None, device: Any):
    """The device to run on; selection is cached per (backend, device, $QKGEN_BACKEND), so a call
    costs a dict lookup, not a backend discovery."""
    try:
        key = (backend, device, _env_get(_ENV_KEY))
        hash(key)
    except TypeError:  # a user's context or queue object: resolved each time
        key = None
    dev = _DEVICES.get(key) if key is not None else None
    if dev is None:
        from ..backends import open_device

        dev = open_device(backend, device)
        if key is not None:
            _DEVICES[key] = dev
    return dev


def device_target(backend: str | None = None, device: Any = None):
    """The Target of the device that calls with this backend and device run on (selection cached)."""
    return _open(backend, device).target


def _private_cache(qt: QTensor, name: str) -> dict:
    """A dict kept on the weight under `name` (its bound calls, its planes), made at first use."""
    cache = qt.__dict__.get(name)
    if cache is None:
        cache = {}
        object.__setattr__(qt, name, cache)  # QTensor is frozen; this is a private cache
    return cache


def _first_call(qt: QTensor, key: tuple, make, inputs: dict, like) -> Any:
    """Bind a call (make() validates its arguments and gives a Bound), run it, and keep it on the
    weight under `key` once it has run: the warm path is then one dict lookup and the Bound."""
    bound = make()
    out = bound(inputs, like())
    cache = _private_cache(qt, _CALLS)
    try:
        cache[key] = bound
    except TypeError:  # a user's context or queue object: bound again at each call
        pass
    return out


def _check_qtensor(qt: Any) -> QTensor:
    if not isinstance(qt, QTensor):
        raise QKGenValueError(f"qtensor: expected a QTensor, got {type(qt).__name__}")
    validate(qt)
    if max(qt.shape, default=0) > MAX_DIM:
        raise QKGenValueError(f"qtensor.shape: {qt.shape}; allowed: dimensions of at most {MAX_DIM} "
                              "(kernels take sizes as 32-bit arguments)")  # fmt: skip
    return qt


def weight_values(qt: QTensor) -> tuple[dict[str, Any], dict[str, Any]]:
    """(arrays, scalars) a weight binds to its kernel's Args."""
    scalars = {"n": qt.n, **family_of(qt.format).launch_scalars(qt)}
    return qt.arrays(), scalars


def _result(dev, native: bool, arr: Any, dt: str, count: int, shape: tuple[int, ...]) -> Any:
    if native:
        return arr.reshape(shape)
    return dev.download(arr, dt, count).reshape(shape)


# ---- dequantize ----


def dequantize_plan(qt: QTensor, dtype: Any = "f32", backend: str | None = None, device: Any = None) -> Plan:
    _check_qtensor(qt)
    dev = _open(backend, device)
    return Plan.make(dev, "dequantize", qt.format, dtype=dtype_name(dtype), blocksize=qt.blocksize,
                     nested=qt.nested, scale_mode=qt.scale_mode)  # fmt: skip


def dequantize(qt: QTensor, dtype: Any = "f32", backend: str | None = None, device: Any = None, out: Any = None):
    """Dequantize on a device. Returns an array of qt.shape in dtype: the backend's own array type
    when the inputs are device arrays (no copies), numpy when they are numpy (bf16 as uint16 bits).
    out: where the weight's arrays are torch CUDA tensors, a tensor for the result (their GPU,
    dtype, qt.shape, contiguous), written and returned instead of a new one."""
    key = ("dequantize", dtype, backend, device, _env_get(_ENV_KEY))
    inputs = _NO_INPUTS if out is None else {"out": out}
    try:
        bound = qt.__dict__[_CALLS][key]
    except (AttributeError, KeyError, TypeError):  # the first call of its kind: checked and bound
        return _first_call(qt, key, lambda: _bind_dequantize(qt, dtype, backend, device), inputs, lambda: qt.data)
    return bound.call(inputs, qt.data)


def _bind_dequantize(qt: QTensor, dtype: Any, backend: str | None, device: Any) -> Bound:
    plan = dequantize_plan(qt, dtype_name(dtype), backend, device)
    arrays, sizes = weight_values(qt)
    like = qt.data if plan.dev.is_native(qt.data) else None
    return Bound([(plan, sizes)], arrays, {}, like, "out", qt.shape)


# ---- gemv ----


def _shape_of(a: Any, name: str) -> tuple[int, ...]:
    shape = getattr(a, "shape", None)
    if shape is None:
        raise QKGenValueError(f"{name}: {type(a).__name__} has no shape; allowed: numpy arrays or device arrays")
    return tuple(int(s) for s in shape)


def x_dtype(x: Any) -> str:
    """The activation dtype of x: 'f32' | 'f16' | 'bf16' (on the host bf16 travels as uint16 bits)."""
    if isinstance(x, np.ndarray) and x.dtype == np.uint16:
        return "bf16"
    try:
        return dtypes.float_dtype(getattr(x, "dtype", None), "x")
    except QKGenValueError:
        raise QKGenValueError(f"x: dtype {getattr(x, 'dtype', None)}; allowed: float32, float16, bfloat16 "
                              "(on the host: uint16 bf16 bits)") from None


def gemv_inputs(qt: QTensor, x: Any) -> tuple[int, int, int, str]:
    """(N, K, M, dtype) of y = x @ W.T after validating the weight qt and the activations x."""
    _check_qtensor(qt)
    if len(qt.shape) != 2:
        raise QKGenValueError(f"qtensor.shape: {qt.shape}; allowed: a 2-D weight [N, K]")
    n_out, k = qt.shape
    shape = _shape_of(x, "x")
    xshape = (1, shape[0]) if len(shape) == 1 else shape
    if len(xshape) != 2 or xshape[1] != k or not 1 <= xshape[0] <= MAX_M:
        raise QKGenValueError(f"x.shape: {shape}; allowed: [M, {k}] or [{k}] with 1 <= M <= {MAX_M}")
    return n_out, k, xshape[0], x_dtype(x)


def _check_k(k: int, multiple: int, what: str) -> None:
    if k % multiple:
        raise QKGenValueError(f"x.shape: K={k} must be a multiple of {multiple} for {what}")


def gemv_plans(qt: QTensor, x: Any, path: str | None = "float", backend: str | None = None, device: Any = None,
               fast_decode: bool = True, layout: str | None = None,
               round_x: bool | None = None) -> tuple[list[Plan], dict]:  # fmt: skip
    """The plans of y = x @ W.T on `path` (float: one kernel; pairs: that kernel by byte pairs;
    int8dot: quantize_q8_1 then gemv_int8dot; int8mma: quantize_q8_1 then gemv_int8mma; None: the
    one measured faster, runtime.paths) and the launch sizes; what gemv and the bench share. layout
    (int8dot): "blocks" or "planes" (W from weight_planes, x quantized to q8_1 planes); int8mma:
    "blocks" or "fragments" (W from weight_fragments, read by gemv_int8frag); None: runtime.paths'
    default for the format and device. round_x (the mma path, f32 x): round x to f16 once
    (round_to_f16) before gemv_mma rather than in every work-group; the same y bit for bit. None:
    where runtime.paths measured it faster."""
    if path is not None and path not in PATHS:
        raise QKGenValueError(f"path: {path!r}; allowed: {', '.join(PATHS)}")
    if layout is not None and layout != "fragments":
        check_layout(layout)
    if not isinstance(fast_decode, bool):
        raise QKGenValueError(f"fast_decode: {fast_decode!r}; allowed: True or False")
    n_out, k, m, dtype = gemv_inputs(qt, x)
    dev = _open(backend, device)
    mmax = 1 if m == 1 else MAX_M
    _, sizes = weight_values(qt)
    sizes.update(N=n_out, K=k, M=m)
    if path is None:
        path = default_path(dev.target, qt.format, m, dtype, n_out, k)
    if path == "pairs":
        require_pairs(qt.format, dtype, dev.target, m, "path: 'pairs'", f"M = {m}")
    if path in ("float", "pairs", "mma") and layout not in (None, "blocks"):
        raise QKGenValueError(f"layout: {layout!r}; the {path} path reads the blocks; allowed: blocks (the int8dot "
                              "path also reads planes, the int8mma path fragments)")  # fmt: skip
    if round_x is not None and not isinstance(round_x, bool):
        raise QKGenValueError(f"round_x: {round_x!r}; allowed: None, True or False")
    if round_x and (path != "mma" or dtype != "f32"):
        raise QKGenValueError(f"round_x: True with path {path!r} and {dtype} x; allowed: True only on the mma "
                              "path with f32 x")  # fmt: skip
    if path in ("float", "pairs"):  # the knobs of shapes measured faster on this kind of device
        knobs = ({**pairs_knobs(dev.target, n_out, dev.info.details.get("SMs")), "pairs": True} if path == "pairs"
                 else float_knobs(dev.target, qt.format, m, dtype))  # fmt: skip
        if not fast_decode:
            knobs["fast_decode"] = False
        plan = Plan.make(dev, "gemv", qt.format, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                         scale_mode=qt.scale_mode, mmax=mmax, **knobs)
        _check_k(k, plan.ks.param("ept"), qt.describe())
        return [plan], sizes
    if path == "mma":
        rounded = dtype == "f32" and (default_round_x(dev.target, qt.format, m) if round_x is None else round_x)
        if rounded and m * k > ROUND_MAX_VALUES:  # round_to_f16 counts values in 32 bits
            if round_x:
                raise QKGenValueError(f"round_x: True with x [{m}, {k}]; allowed: M * K <= {ROUND_MAX_VALUES}")
            rounded = False
        # shapes measured faster on this kind of device; rounded x is read as 16-bit x is
        knobs = mma_knobs(dev.target, qt.format, m, "f16" if rounded else dtype, (qt.blocksize, qt.scale_mode, k))
        if rounded:
            knobs["x_rounded"] = True
        plan = Plan.make(dev, "gemv_mma", qt.format, dtype=dtype, blocksize=qt.blocksize, nested=qt.nested,
                         scale_mode=qt.scale_mode, **knobs)  # fmt: skip
        _check_k(k, plan.ks.param("ept"), f"the mma path ({qt.describe()})")
        return ([Plan.make(dev, "round_to_f16", None, dtype="f32")] if rounded else []) + [plan], sizes
    # the int8mma path: gemv_int8mma for block rows, gemv_int8mma_sub for super-block rows
    ops = ("gemv_int8mma", "gemv_int8mma_sub") if path == "int8mma" else ("gemv_int8dot",)
    op = next((o for o in ops if get_op(o).accepts(qt.format)), None)
    if op is None:
        raise QKGenValueError(f"qtensor.format: {qt.format.name} has no {path} path; allowed: "
                              f"{', '.join(f for o in ops for f in get_op(o).formats())}")  # fmt: skip
    act = get(INT8DOT_ACT)
    multiple = k_multiple(qt.format)
    _check_k(k, multiple, f"the int8dot path of {qt.format.name} (whole {multiple}-element blocks per row)")
    if op in ("gemv_int8mma", "gemv_int8mma_sub"):
        layout = layout or default_int8mma_layout(dev.target, qt.format)
        if layout not in ("blocks", "fragments"):
            raise QKGenValueError(f"layout: {layout!r} is not one the int8mma path reads; allowed: blocks, fragments")
        # x in the layout of W: gemv_int8frag reads x's q8_1 blocks in their fragments layout too
        sizes.update(q8_1_sizes(m, k, layout))
        quant = Plan.make(dev, "quantize_q8_1", act, dtype=dtype, **_q8_1_options(dev, layout))
        if layout == "blocks":  # W as it is
            return [quant, Plan.make(dev, op, qt.format, dtype=dtype)], sizes
        frag_op = "gemv_int8frag_sub" if op == "gemv_int8mma_sub" else "gemv_int8frag"  # W in its fragments layout
        knobs = int8frag_knobs(dev.target, qt.format)  # shapes measured faster on this kind of device
        return [quant, Plan.make(dev, frag_op, qt.format, dtype=dtype, **knobs)], sizes
    layout = layout or default_layout(dev.target)
    if layout not in ("blocks", "planes"):
        raise QKGenValueError(f"layout: {layout!r} is not one the int8dot path reads; allowed: blocks, planes")
    # x in planes with W in planes, or alone where runtime.paths measured it faster for the row
    x_planes = layout == "planes" or default_x_planes(dev.target, qt.format, m)
    xlayout = "planes" if x_planes else "blocks"
    sizes.update(q8_1_sizes(m, k, xlayout))
    quant = Plan.make(dev, "quantize_q8_1", act, dtype=dtype, **_q8_1_options(dev, xlayout))
    kw = {} if layout == "blocks" else {"layout": layout}  # blocks: today's kernels, named as before
    if x_planes and layout == "blocks":
        kw["x_planes"] = True
    return [quant, Plan.make(dev, op, qt.format, dtype=dtype, mmax=mmax, **kw)], sizes


def _q8_1_options(dev, layout: str, lane_group: bool | None = None) -> dict:
    """quantize_q8_1's render options: the layout and, where asked or where runtime.paths takes it on
    this device (lane_group None), a lane group per block. Options at their defaults are left out,
    so those kernels keep their names."""
    kw: dict[str, Any] = {} if layout == "blocks" else {"layout": layout}
    if lane_group if lane_group is not None else default_lane_group(dev.target):
        kw["lane_group"] = True
    return kw


def _weight_copy(qt: QTensor, dev, cache_name: str, op: str, sizes: dict) -> tuple[Any, Any]:
    """(launch argument, array) of the copy of qt's blocks that `op` (a repack kernel, one output)
    makes on `dev`: made at the first call and kept in the QTensor's private per-device cache
    `cache_name`, like its bound calls, so warm calls cost nothing more."""
    cache = _private_cache(qt, cache_name)
    got = cache.get(dev)
    if got is None:
        plan = Plan.make(dev, op, qt.format, dtype="u8")
        (name, (buf, arr, _)), = plan.outputs(sizes, like=qt.data if dev.is_native(qt.data) else None).items()
        plan.launch({"data": qt.data, name: buf}, sizes)
        got = cache[dev] = (ready(buf), arr)  # the array keeps the buffer alive
    return got


def weight_planes(qt: QTensor, dev) -> Any:
    """qt's blocks in the planes layout (formats.layout) on `dev`, as a launch argument: made by the
    repack_planes kernel at the first call and kept with the weight (a private per-device cache on
    the QTensor, like its bound calls), so warm calls cost nothing more. This keeps a second copy of
    the weight on the device, as large as its blocks, for as long as the QTensor lives; it is made
    from the blocks once, so a later in-place change to qt.data is not seen by the planes layout."""
    sizes = {"nblocks": qt.nblocks, "planes_bytes": qt.nblocks * qt.format.block_bytes}
    return _weight_copy(qt, dev, _PLANES, "repack_planes", sizes)[0]


def weight_fragments(qt: QTensor, dev) -> Any:
    """qt's blocks in the fragments layout (ops/int8frag.py) on `dev`, as a launch argument: made by
    the repack_fragments kernel at the first call and kept with the weight, as weight_planes keeps
    the planes (a second copy on the device, a little larger than the blocks where a row's blocks
    are not whole groups; a later in-place change to qt.data is not seen by it)."""
    n, k = qt.shape
    if qt.format.sub_scales:  # super-block rows: their own fragments layout (ops/int8frag_sub.py)
        sizes = {"N": n, "K": k, "frags_bytes": frag_sub_bytes(qt.format, n, k)}
        return _weight_copy(qt, dev, _FRAGMENTS, "repack_fragments_sub", sizes)[0]
    sizes = {"N": n, "K": k, "frags_bytes": frag_planes(qt.format, n, k // qt.format.block)["bytes"]}
    return _weight_copy(qt, dev, _FRAGMENTS, "repack_fragments", sizes)[0]


# a repacked copy of the weight a GEMV kernel may bind -> what makes it (and keeps it with the weight)
_REPACKED = {"planes": weight_planes, "fragments": weight_fragments}


def repacked_arrays(qt: QTensor, plans: list[Plan]) -> dict[str, Any]:
    """The repacked copies of qt (planes, fragments) that `plans` bind, as launch arguments by bind
    name: made on the plans' device at the first call, kept with the weight."""
    binds = {a.bind for p in plans for a in p.ks.args}
    return {name: make(qt, plans[0].dev) for name, make in _REPACKED.items() if name in binds}


def fragments_array(qt: QTensor, dev) -> Any:
    """The array holding qt's fragments layout on dev (made by weight_fragments), e.g. to download it."""
    weight_fragments(qt, dev)
    return qt.__dict__[_FRAGMENTS][dev][1]


def planes_array(qt: QTensor, dev) -> Any:
    """The array holding qt's planes on dev (made by weight_planes), e.g. to download them."""
    weight_planes(qt, dev)
    return qt.__dict__[_PLANES][dev][1]


def gemv(qt: QTensor, x: Any, path: str | None = None, backend: str | None = None, device: Any = None,
         fast_decode: bool = True, layout: str | None = None, round_x: bool | None = None,
         out: Any = None):  # fmt: skip
    """y = x @ W.T for a quantized weight W (qt, shape [N, K]) and activations x [M, K], M <= 8.

    y is [M, N] in x's dtype (f32, f16 or bf16), accumulated in f32; a backend's own array type
    when x is one, numpy when x is numpy. path "float" decodes W in registers and multiplies in
    f32; path "pairs" (nf4, fp4, int4 at M = 1 with f16 or bf16 x, where the device has that type's
    arithmetic) is the float path's kernel looking up each code byte's two values as one pair of x's
    type and multiplying it with x's pair there, a word's 4 products added in that type before f32
    (about twice the float path's error); path "int8dot" (GGUF formats) quantizes x to q8_1 first
    and uses 4-way int8 dot products;
    path "int8mma" (q4_0 .. q8_0) computes the same integer sums by int8 warp matrix instructions
    (tensor cores on CUDA sm_80+; elsewhere through local memory, slowly), one for all rows of x;
    path "mma" (rows with one scale per block) rounds each decoded weight to x's 16-bit type (f16
    for f32 x, and x with it: on CUDA from M = 2 by a launch of its own, once for every work-group)
    and multiplies by warp matrix instructions (tensor cores on CUDA sm_80+; elsewhere through
    local memory, slowly), adding the products in f32; path None (the
    default) takes the one measured faster for the format, M and kind of device (runtime.paths: on
    CUDA int8dot for the GGUF rows, int8mma for q4_1, q5_1 and (f32 x) q4_0 from M = 5 or 6, mma
    for bitsandbytes and int rows at M > 1 with 16-bit x and for nf4, fp4, int4 and blockwise8
    rows with f32 x (the int8 row from M = 2), float elsewhere).

    layout: the weight layout the int8dot path ("blocks", "planes") or the int8mma path ("blocks",
    "fragments") reads; None: runtime.paths' default for the format and device (on CUDA the int8mma
    path reads fragments for q4_0, q5_0 and q8_0). "planes" and "fragments" are copies of the weight
    made on the device at the first call and kept with it: "blocks" keeps no second copy.

    round_x (the mma path with f32 x): True rounds x to f16 by a launch of its own first, once for
    every work-group (less device time at M > 1: an H100 took 28.1 instead of 42.9 µs for nf4 at
    M = 8 on 4096 x 14336), False in each work-group of the one kernel (one launch less of host
    time); the same y either way, bit for bit. None: where runtime.paths measured it faster.

    out: where x is a torch CUDA tensor, a tensor for y (x's GPU and dtype, shape [M, N], contiguous,
    apart from x), written and returned: the call allocates nothing then (about 6 µs of host time a
    call on the hosts of docs/bench/2026-11-28-h200-session27.md).
    """
    # A warm call is keyed by everything its binding depends on: x's type, dtype and shape (the
    # Bound checks x's device, layout and alignment), the options and the device selection.
    key = (type(x), getattr(x, "dtype", None), getattr(x, "shape", None), path, fast_decode,
           type(fast_decode), layout, round_x, type(round_x), backend, device, _env_get(_ENV_KEY))  # fmt: skip
    inputs = {"x": x} if out is None else {"x": x, "y": _apart(out, x)}
    try:
        bound = qt.__dict__[_CALLS][key]
    except (AttributeError, KeyError, TypeError):  # the first call of its kind: checked and bound
        make = lambda: _bind_gemv(qt, x, path, backend, device, fast_decode, layout, round_x)  # noqa: E731
        return _first_call(qt, key, make, inputs, lambda: x)
    return bound.call(inputs, x)


def _apart(out: Any, x: Any) -> Any:
    """out, refused where its memory overlaps x's (the kernels read x while they write y)."""
    ptr = getattr(out, "data_ptr", None)
    if ptr is not None and hasattr(x, "data_ptr"):
        a, b = ptr(), x.data_ptr()
        if a < b + x.numel() * x.element_size() and b < a + out.numel() * out.element_size():
            raise QKGenValueError("out: overlaps x; allowed: a tensor apart from x")
    return out


def _bind_gemv(qt: QTensor, x: Any, path: str | None, backend: str | None, device: Any, fast_decode: bool,
               layout: str | None, round_x: bool | None = None) -> Bound:  # fmt: skip
    plans, sizes = gemv_plans(qt, x, path, backend, device, fast_decode, layout, round_x)
    arrays, _ = weight_values(qt)
    arrays.update(repacked_arrays(qt, plans))  # the int8dot path's planes, the int8mma path's fragments
    like = x if plans[0].dev.is_native(x) else None
    return Bound([(p, sizes) for p in plans], arrays, {"x": x}, like, "y", (sizes["M"], sizes["N"]))


def quantize_q8_1_device(x: Any, backend: str | None = None, device: Any = None, layout: str = "blocks",
                         lane_group: bool | None = None):  # fmt: skip
    """q8_1 blocks of x [M, K] (or [K]; K a multiple of 32), quantized on the device: the bytes
    reference.quantize(x as f32, "q8_1").data holds (layout "planes": those bytes in the planes
    layout, reference.to_planes; "fragments": in gemv_int8frag's, ops.int8dot.to_x_fragments).
    numpy x (bf16 as uint16 bits) -> a numpy uint8 array; a device array -> the backend's byte
    array. lane_group: a lane group per block (quantize_q8_1's knob); None: as the int8dot path
    takes it on this device (runtime.paths)."""
    if layout not in X_LAYOUTS:
        raise QKGenValueError(f"layout: {layout!r}; allowed: {', '.join(X_LAYOUTS)}")
    if lane_group is not None and not isinstance(lane_group, bool):
        raise QKGenValueError(f"lane_group: {lane_group!r}; allowed: True, False or None")
    shape = _shape_of(x, "x")
    xshape = (1, shape[0]) if len(shape) == 1 else shape
    if len(xshape) != 2 or min(xshape) < 1:
        raise QKGenValueError(f"x.shape: {shape}; allowed: [M, K] or [K]")
    act = get(INT8DOT_ACT)
    _check_k(xshape[1], act.block, "q8_1 blocks")
    dev = _open(backend, device)
    plan = Plan.make(dev, "quantize_q8_1", act, dtype=x_dtype(x), **_q8_1_options(dev, layout, lane_group))
    sizes = q8_1_sizes(xshape[0], xshape[1], layout)
    native = dev.is_native(x)
    (buf, arr, dt), = plan.outputs(sizes, like=x if native else None).values()
    plan.launch({"x": x, "xq": buf}, sizes)
    nbytes = sizes["nblocks"] * act.block_bytes
    return _result(dev, native, arr, dt, nbytes, (nbytes,))
