"""`qkgen check`: run every kernel (dequantize, gemv, quantize...) on a device against the reference.

Inputs are fresh random tensors with odd sizes and partial blocks; outputs are poisoned (NaN
bytes) before the kernel runs, so an element the kernel fails to write cannot pass. f32 results
must equal the reference exactly; f16/bf16 results the correctly rounded reference. GEMV results
must lie within the f32 accumulation bound of the float64 product.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import QKGenError
from ..formats import Format, family_of, get
from ..formats import reference
from ..formats.codec import host_array
from ..formats.reference import host_f32
from ..kernels.ops import get_op
from ..kernels.ops.gemv import pairs_apply
from ..kernels.render import render
from ..runtime import api, plan
from .catalog import variants


@dataclass
class Result:
    op: str
    format: str
    variant: str
    dtype: str
    max_abs_err: float
    status: str  # PASS, FAIL, ERROR
    detail: str = ""


def sample(fmt: Format, rng: np.random.Generator, nested: bool = False, scale_mode: str | None = None,
           blocksize: int | None = None, shape: tuple[int, ...] | None = None):  # fmt: skip
    """A QTensor of random data (normal, with a few outliers) quantized by the reference codec; the
    family's sample shape has odd sizes, partial last blocks or groups and partial vector chunks."""
    shape = shape or family_of(fmt).sample_shape
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[rng.integers(0, x.size, 3)] *= 8.0
    return reference.quantize(x, fmt, blocksize=blocksize, nested=nested, scale_mode=scale_mode)


def compare(out: np.ndarray, ref_f32: np.ndarray, dtype: str) -> tuple[bool, float]:
    """(bit-exact vs the correctly rounded reference, max abs error vs the f32 reference)."""
    want = ref_f32 if dtype == "f32" else reference.round_to(ref_f32, dtype)
    exact = out.shape == want.shape and np.array_equal(
        np.asarray(out).view(np.uint8), np.ascontiguousarray(want).view(np.uint8)
    )
    got = host_f32(out, dtype)
    err = float(np.max(np.abs(got.astype(np.float64) - ref_f32))) if got.size else 0.0
    return exact, err


def variant_label(v: dict) -> str:
    parts = []
    if v.get("nested"):
        parts.append("nested")
    if v.get("scale_mode"):
        parts.append(v["scale_mode"] + (f" g{v['blocksize']}" if v.get("blocksize") else ""))
    return " ".join(parts) or "-"


GEMV_ROWS, GEMV_CHUNKS = 67, 3  # odd N; K of 3 chunks: not a multiple of what all lanes take per step


def _check_dequantize(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    qt = sample(fmt, rng, v.get("nested", False), v.get("scale_mode"), v.get("blocksize"))
    out = api.dequantize(qt, v["dtype"], backend=backend, device=device)
    return compare(np.asarray(out), reference.dequantize(qt), v["dtype"])


OUT_EPS = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8}  # half an ulp of the output dtype, relative


def gemv_sample(fmt: Format, rng: np.random.Generator, v: dict, rows: int = GEMV_ROWS, op: str = "gemv"):
    """A random weight [rows, K] for a gemv (or `op`) variant, K of GEMV_CHUNKS of op's chunks (whole blocks)."""
    kw = {"blocksize": v.get("blocksize"), "nested": v.get("nested", False), "scale_mode": v.get("scale_mode")}
    ept = render(op, fmt, "opencl", dtype=v.get("dtype", "f32"), **kw).param("ept")
    k = GEMV_CHUNKS * max(ept, fmt.block if fmt.inline else 1)
    return sample(fmt, rng, kw["nested"], kw["scale_mode"], kw["blocksize"], shape=(rows, k))


def gemv_x(rng: np.random.Generator, m: int, k: int, dtype: str) -> np.ndarray:
    """Random activations [m, k] as the host passes them (f16 as float16, bf16 as uint16 bits)."""
    x = rng.standard_normal((m, k)).astype(np.float32)
    return reference.round_to(x, dtype) if dtype != "f32" else x


def gemv_error(y: np.ndarray, x: np.ndarray, qt, dtype: str, rounded: bool = False,
               pairs: bool = False, pair_table: bool = False) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(|y - ref|, bound) against ref, the float64 product of x and the dequantized weight (both
    rounded to the 16-bit product type first where `rounded`: the mma path's), the worst-case f32
    accumulation bound plus half an ulp of the output dtype. pairs (the pairs path): plus the
    16-bit part, where each code value is rounded to x's type (u, its unit roundoff) and 4 products
    add up there in 4 roundings: at most (u + 4u / (1 - 4u)) < 6u of their magnitudes, and below
    the normal range an absolute 2^-25 a rounding (f16 subnormals), times the block's scale (at most
    2 |w| for a code of magnitude 1, the row's largest). pair_table (the mma path's byte-pair table,
    with rounded): each code value rounded to the 16-bit type, then times its scale, in place of
    each weight rounded."""
    xf = host_f32(x, dtype).astype(np.float64)
    w = reference.dequantize(qt).astype(np.float64)
    if rounded:  # both operands in the 16-bit type the products take
        from ..kernels.ops.mma import product_type, round_16

        ptype = product_type(dtype)
        if pair_table:
            codes = reference.code_values(qt.format, reference.unpack_codes(qt))
            scale, _ = family_of(qt.format).element_scales(qt, host_array(qt.data))
            w = round_16(codes, ptype) * scale.reshape(qt.shape).astype(np.float64)
        else:
            w = round_16(w, ptype)
        xf = round_16(xf, ptype)
    ref = xf @ w.T
    bound = 2 * w.shape[1] * 2.0**-24 * (np.abs(xf) @ np.abs(w).T) + OUT_EPS[dtype] * np.abs(ref)
    if pairs:
        u = OUT_EPS[dtype]  # the unit roundoff of x's 16-bit type (half an ulp of 1)
        bound += 6 * u * (np.abs(xf) @ np.abs(w).T) + w.shape[1] * 2.0**-25 * 2 * np.abs(w).max(axis=1)
    return np.abs(host_f32(np.asarray(y), dtype).astype(np.float64) - ref), bound


def gemv_round_x(qt, x: np.ndarray, round_x: bool, backend=None, device=None) -> np.ndarray:
    """y on the mma path for f32 x, with x rounded to f16 by round_to_f16 first (round_x True) or
    in gemv_mma's loads (False), whatever runtime.paths would pick."""
    return api.gemv(qt, x, path="mma", backend=backend, device=device, round_x=round_x)


def _check_gemv(v: dict, fmt: Format, rng, backend, device, path: str = "float") -> tuple[bool, float]:
    """y = x @ W.T with M = 3 on `path`, within gemv_error's bound (the mma path's against W rounded
    to x's dtype, as that path takes it). x_rounded (the mma path, f32 x rounded by round_to_f16
    first): also bit for bit the y of the one-kernel form. The float path's M = 1 kernel by byte
    pairs too (path "pairs", within its bound), where the device takes it."""
    qt = gemv_sample(fmt, rng, v, op="gemv_mma" if path == "mma" else "gemv")
    x = gemv_x(rng, 3, qt.shape[1], v["dtype"])
    same = True
    if v.get("x_rounded"):
        y = gemv_round_x(qt, x, True, backend, device)
        same = np.array_equal(y.view(np.uint32), gemv_round_x(qt, x, False, backend, device).view(np.uint32))
    else:
        y = api.gemv(qt, x, path=path, backend=backend, device=device)
    err, bound = gemv_error(y, x, qt, v["dtype"], rounded=path == "mma")
    ok, worst = bool(np.all(err <= bound)) and same, float(err.max())
    if path == "float" and pairs_apply(fmt, v["dtype"], api.device_target(backend, device)):
        y1 = api.gemv(qt, x[:1], path="pairs", backend=backend, device=device)
        err, bound = gemv_error(y1, x[:1], qt, v["dtype"], pairs=True)
        ok, worst = ok and bool(np.all(err <= bound)), max(worst, float(err.max()))
    return ok, worst


def _check_quantize_q8_1(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    """The device's q8_1 bytes of activations [3, 7 blocks] equal the reference codec's, in the
    blocks layout and in the fragments layout gemv_int8frag reads (ops.int8dot.to_x_fragments)."""
    from ..kernels.ops.int8dot import to_x_fragments

    x = gemv_x(rng, 3, 7 * fmt.block, v["dtype"])
    blocks = reference.quantize(host_f32(x, v["dtype"]), fmt).data.reshape(-1)
    differ = 0
    for layout, want in (("blocks", blocks), ("fragments", to_x_fragments(blocks, 3, 7 * fmt.block))):
        got = np.asarray(api.quantize_q8_1_device(x, backend=backend, device=device, layout=layout)).reshape(-1)
        differ += np.count_nonzero(got != want) if got.size == want.size else want.size
    return differ == 0, float(differ)


def int8dot_error(y: np.ndarray, x: np.ndarray, qt, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(|y - ref|, bound) against the int8dot path's own definition (int8dot_terms: x through q8_1,
    its f16 s field included), the f32 bound: a few roundings per term plus the sum over terms,
    plus half an ulp of the output dtype. The int8dot and int8mma paths both meet it."""
    from ..kernels.ops.int8dot import int8dot_terms

    terms = int8dot_terms(qt, host_f32(x, dtype))
    want = terms.sum(axis=-1)
    bound = 2 * (terms.shape[-1] + 4) * 2.0**-24 * np.abs(terms).sum(axis=-1) + OUT_EPS[dtype] * np.abs(want)
    return np.abs(host_f32(np.asarray(y), dtype).astype(np.float64) - want), bound


def _check_gemv_int8dot(v: dict, fmt: Format, rng, backend, device, path: str = "int8dot",
                        layout: str = "blocks") -> tuple[bool, float]:  # fmt: skip
    """y with M = 3 on `path` (int8dot, or int8mma: the same sums by warp matrix products) reading W
    in `layout`, within int8dot_error's bound."""
    qt = gemv_sample(fmt, rng, v)
    x = gemv_x(rng, 3, qt.shape[1], v["dtype"])
    y = api.gemv(qt, x, path=path, backend=backend, device=device, layout=layout)
    err, bound = int8dot_error(y, x, qt, v["dtype"])
    return bool(np.all(err <= bound)), float(err.max())


def _check_embedding(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    """Rows by token id (repeats, first and last row included) equal dequantize's, bit for bit."""
    from ..interop.lookup import embedding

    qt = gemv_sample(fmt, rng, v, rows=GEMV_ROWS, op="embedding")  # K-quant rows have no gemv
    ids = np.concatenate([[0, GEMV_ROWS - 1], rng.integers(0, GEMV_ROWS, 9)]).astype(np.uint32)
    out = embedding(qt, ids, v["dtype"], backend=backend, device=device)
    want = reference.dequantize(qt).reshape(qt.rows, -1)[ids]
    return compare(np.asarray(out), want, v["dtype"])


QUANTIZE_ARRAYS = ("data", "absmax", "absmax_q", "absmax2", "scale")


def _quantize_pair(v: dict, fmt: Format, rng, backend, device):
    """(device QTensor, reference QTensor) of the same random input in v's dtype (odd sizes, partial
    blocks and groups where the format allows them; GGUF: whole blocks)."""
    from ..runtime.quantize import quantize_device

    shape = family_of(fmt).sample_shape
    x = rng.standard_normal(shape).astype(np.float32)
    x.flat[rng.integers(0, x.size, 3)] *= 8.0  # a few outliers: blocks of differing scales
    x = reference.round_to(x, v["dtype"]) if v["dtype"] != "f32" else x  # as the host passes them
    opts = {"nested": v.get("nested", False), "scale_mode": v.get("scale_mode"), "blocksize": v.get("blocksize")}
    got = quantize_device(x, fmt, backend=backend, device=device, **{k: o for k, o in opts.items() if o})
    want = reference.quantize(host_f32(x, v["dtype"]), fmt, **{k: o for k, o in opts.items() if o})
    return got, want


def _differing(got, want, names) -> int:
    """Bytes that differ over the named arrays (an array missing on one side counts whole)."""
    bad = 0
    for name in names:
        a, b = getattr(got, name), getattr(want, name)
        if a is None or b is None:
            bad += 0 if a is b else 1
            continue
        a, b = np.asarray(a).reshape(-1).view(np.uint8), np.asarray(b).reshape(-1).view(np.uint8)
        bad += int(np.count_nonzero(a != b)) if a.shape == b.shape else max(a.size, b.size, 1)
    return bad


def _check_quantize(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    """Every array (codes, statistics), the nested offset and the geometry equal the reference
    codec's, bit for bit; the max abs err column counts differing bytes."""
    got, want = _quantize_pair(v, fmt, rng, backend, device)
    bad = _differing(got, want, QUANTIZE_ARRAYS)
    same = got.offset == want.offset and (got.shape, got.blocksize, got.scale_mode) == (
        want.shape, want.blocksize, want.scale_mode)  # fmt: skip
    return bad == 0 and same, float(bad)


def _check_quantize_stats(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    """The statistics kernel's arrays (absmax or scale; nested: absmax2 and the offset) equal the
    reference's."""
    got, want = _quantize_pair(v, fmt, rng, backend, device)
    bad = _differing(got, want, ("absmax2",) if v.get("nested") else ("absmax", "scale"))
    return bad == 0 and got.offset == want.offset, float(bad)


def _check_repack_planes(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    """The device's planes of a weight of an odd block count equal reference.to_planes, byte for byte."""
    qt = sample(fmt, rng, shape=(3, 7 * fmt.block))
    dev = api._open(backend, device)
    planes = api.weight_planes(qt, dev)
    got = dev.download(api.planes_array(qt, dev), "u8", qt.data.size)
    want = reference.to_planes(qt)
    return planes is not None and bool(np.array_equal(got, want)), float(np.count_nonzero(got != want))


def _check_repack_fragments(v: dict, fmt: Format, rng, backend, device) -> tuple[bool, float]:
    """The device's fragments layout of a weight whose rows are not whole groups of blocks (or tiles)
    equals ops.int8frag.to_fragments (super-block rows: ops.int8frag_sub.to_sub_fragments), byte
    for byte."""
    from ..kernels.ops.int8frag import to_fragments
    from ..kernels.ops.int8frag_sub import to_sub_fragments

    qt = sample(fmt, rng, shape=(3, 7 * fmt.block))
    dev = api._open(backend, device)
    want = (to_sub_fragments if fmt.sub_scales else to_fragments)(fmt, qt.data, *qt.shape)
    got = dev.download(api.fragments_array(qt, dev), "u8", want.size)
    return bool(np.array_equal(got, want)), float(np.count_nonzero(got != want))


def _check_exact_sum(v: dict, fmt, rng, backend, device) -> tuple[bool, float]:
    """The work-groups' slots of an odd count of values (negatives, subnormals, exponents over most
    of the float32 range) equal the reference's, and the mean equals codec.exact_mean_f32, bit for
    bit; the max abs err column counts differing slots."""
    from ..formats.codec import exact_mean_f32
    from ..kernels.ops.exact_sum import group_slots, launch_sizes
    from ..runtime.reduce import device_exact_mean, device_exact_slots

    n = 100003
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-140, 100, n))).astype(np.float32)
    dev = api._open(backend, device)
    got = device_exact_slots(dev, x, n)
    want = group_slots(x, launch_sizes(n, render("exact_sum", None, dev.target).wg)["per_group"])
    bad = int(np.count_nonzero(got != want)) if got.shape == want.shape else max(got.size, want.size)
    same_mean = device_exact_mean(dev, x, n).tobytes() == exact_mean_f32(x).tobytes()
    return bad == 0 and same_mean, float(bad)


def round_x_sample(rng, m: int, k: int) -> np.ndarray:
    """f32 activations [m, k] for round_to_f16: normal values over f16's range and past it, ties
    half-way between f16 neighbours, f16 subnormals and below, signed zeros, infinities and NaN."""
    x = (rng.standard_normal(m * k) * np.exp2(rng.integers(-30, 20, m * k))).astype(np.float32)
    h = rng.standard_normal(m * k).astype(np.float16)
    ties = (h.astype(np.float32).view(np.uint32) + np.uint32(1 << 12)).view(np.float32)  # half an f16 ulp above
    pick = rng.integers(0, 4, m * k)
    x = np.where(pick == 1, ties, x)
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 65504.0, 65520.0, 2.0**-25, 2.0**-24, 6e-8],
                        dtype=np.float32)  # fmt: skip
    x[: specials.size] = specials
    return x.reshape(m, k)


def _check_round_to_f16(v: dict, fmt, rng, backend, device) -> tuple[bool, float]:
    """round_to_f16's words for [3, 70] values (ties, subnormals, overflow, NaN) equal numpy's f16
    rounding, NaN for NaN; the max abs err column counts differing words."""
    from ..kernels.ops.round_f16 import round_reference
    from ..runtime.plan import Plan

    x = round_x_sample(rng, 3, 70)
    dev = api._open(backend, device)
    plan = Plan.make(dev, "round_to_f16", None, dtype="f32")
    sizes = {"M": 3, "K": 70}
    ((buf, arr, _),) = plan.outputs(sizes).values()
    plan.launch({"x": x, "xh": buf}, sizes)
    got = dev.download(arr, "u32", x.size // 2).view(np.uint16)
    want = round_reference(x).view(np.uint16)
    nan = np.isnan(x.reshape(-1))
    bad = np.count_nonzero((got != want) & ~nan) + np.count_nonzero(~np.isnan(got.view(np.float16)[nan]))
    return bad == 0, float(bad)


# Every kernel family of the op registry, and how it is checked against the reference.
CHECKS = {"dequantize": _check_dequantize, "gemv": _check_gemv, "quantize_q8_1": _check_quantize_q8_1,
          "gemv_int8dot": _check_gemv_int8dot, "gemv_int8mma": functools.partial(_check_gemv_int8dot, path="int8mma"),
          "gemv_int8frag": functools.partial(_check_gemv_int8dot, path="int8mma", layout="fragments"),
          "gemv_int8mma_sub": functools.partial(_check_gemv_int8dot, path="int8mma"),
          "gemv_int8frag_sub": functools.partial(_check_gemv_int8dot, path="int8mma", layout="fragments"),
          "gemv_mma": functools.partial(_check_gemv, path="mma"), "embedding": _check_embedding,
          "quantize_stats": _check_quantize_stats,
          "quantize": _check_quantize, "quantize_blockwise": _check_quantize,
          "repack_planes": _check_repack_planes, "repack_fragments": _check_repack_fragments,
          "repack_fragments_sub": _check_repack_fragments,
          "exact_sum": _check_exact_sum, "round_to_f16": _check_round_to_f16}  # fmt: skip


def run(backend: str | None = None, device: int | str | None = None, formats: list[str] | None = None,
        progress: bool = True, seed: int = 0) -> list[Result]:  # fmt: skip
    rng = np.random.default_rng(seed)
    todo = [v for op in CHECKS for v in variants(op, formats) if v.get("mmax", 1) == 1]
    results = []
    bar = _progress(todo, progress)
    plan.POISON_OUTPUTS, before = True, plan.POISON_OUTPUTS
    try:
        for v in bar:
            fmt = get(v["format"])
            row = "-" if get_op(v["op"]).format_free else fmt.name  # an op that reads no row: none named
            label = variant_label(v)
            bar.set_postfix_str(f"{v['format']} {v['dtype']} {label}") if hasattr(bar, "set_postfix_str") else None
            try:
                ok, err = CHECKS[v["op"]](v, fmt, rng, backend, device)
                results.append(Result(v["op"], row, label, v["dtype"], err, "PASS" if ok else "FAIL"))
            except QKGenError as e:
                results.append(Result(v["op"], row, label, v["dtype"], float("nan"), "ERROR",
                                      str(e).splitlines()[0]))  # fmt: skip
    finally:
        plan.POISON_OUTPUTS = before
    return results


def _progress(items, enabled: bool):
    import sys

    if not enabled or not sys.stderr.isatty():  # a log gets the table, not thousands of bar updates
        return items
    from tqdm import tqdm

    return tqdm(items, desc="check", unit="kernel", leave=False)


def table(results: list[Result]) -> str:
    head = f"{'format':<11} {'op':<11} {'variant':<13} {'dtype':<5} {'max abs err':>12}  status"
    rows = [head, "-" * len(head)]
    for r in results:
        rows.append(f"{r.format:<11} {r.op:<11} {r.variant:<13} {r.dtype:<5} {r.max_abs_err:>12.3g}  {r.status}"
                    + (f"  {r.detail}" if r.detail else ""))  # fmt: skip
    passed = sum(r.status == "PASS" for r in results)
    rows.append(f"{passed} passed, {len(results) - passed} failed")
    return "\n".join(rows)
