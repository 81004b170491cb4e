"""GGUF K-quants (Q2_K .. Q6_K, Q8_K): 256-element super-blocks laid out as ggml-common.h declares
them. Value = f32(f32(D * s_j) * q) - f32(Dmin * m_j), D/Dmin the super-block scales (f16; q8_k:
f32), s_j/m_j the integer scale/min of the element's sub-block (q3_k/q6_k: no min; q8_k: D * q), as
ggml's dequantize_row_q*_K and gguf-py compute it. All of it is row data: where code bits sit is
the row's planes (row.locate: the low bits split-packed in units of `unit` elements, the high bits
of hmask/qh in units of `high_unit`), the sub-block scales are `sub_scales` (subscales.py decodes
them), so the codec, the reference and the kernel templates need nothing from this module but
the quantizer.

Reference quantizers: llama.cpp's quantize_row_q*_K_ref from its algorithm (make_qkx2_quants for
q2_k/q4_k/q5_k, make_q3_quants for q3_k, make_qx_quants for q6_k, amax/127 for q8_k), in numpy: every
float32 operation of the C source in its order (sequential sums, no fused multiply-add), ggml's
nearest_int emulated bit for bit. Equal bytes to ggml-quants.c built with -ffp-contract=off.

What adding the family touched beyond this module (issue 13; lines in docs/architecture.md): the row
vocabulary (row.py: planes with `unit`/`high_unit`/`high_bits`, `sub_block`/`sub_scales`/
`scales_field`, f32 and i16 fields; registry.py: their rules), subscales.py (the k4, k3, nibbles and
i8 encodings), codec.py (every plane packed by locate()), decode.jinja (`sub_scale`, a split high
plane, an f32 d), ops/dequantize.py (`decodes`, `chunk_start`), and two lines of table.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import codec
from .family import register_family
from .gguf import Gguf
from .row import Field, Format
from .subscales import decode as decode_sub_scales
from .subscales import encode as encode_sub_scales
from .subscales import field as _field

_F32 = np.float32
QK_K = 256
GROUP_MAX_EPS = _F32(1e-15)


# ---- llama.cpp's reference quantizers, vectorized over sub-blocks (rows of x), float32 throughout ----

# make_qkx2_quants parameters of quantize_row_q*_K_ref: (weights, rmin, rdelta, nstep, use_mad)
_QKX2 = {"q2_k": ("abs", -0.5, 0.1, 15, True), "q4_k": ("rms+abs", -1.0, 0.1, 20, False),
         "q5_k": ("rms+abs", -0.5, 0.1, 15, False)}  # fmt: skip


def nearest_int(v: Any) -> np.ndarray:
    """ggml's nearest_int: the low mantissa bits of f32(v + 1.5 * 2^23) minus 2^22 (ties to even)."""
    with np.errstate(all="ignore"):
        t = np.asarray(v, dtype=_F32) + _F32(12582912.0)
    return (t.view(np.int32) & 0x7FFFFF) - 0x400000


def _seq_sum(terms: np.ndarray) -> np.ndarray:
    """Sum over the last axis in C loop order, in float32."""
    acc = np.zeros(terms.shape[:-1], _F32)
    for i in range(terms.shape[-1]):
        acc = acc + terms[..., i]
    return acc


def _max_abs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first value of largest magnitude, that magnitude) per row (ggml: `if (ax > amax)`)."""
    v = np.take_along_axis(x, np.abs(x).argmax(axis=-1)[..., None], axis=-1)[..., 0]
    return v, np.abs(v)


def _i8(v: np.ndarray) -> np.ndarray:
    return ((v + 128) & 0xFF) - 128  # C's conversion of an int to int8_t


def _qkx2(x, w, nmax, rmin, rdelta, nstep, use_mad):
    """make_qkx2_quants per row: (L [S, n], scale [S], the_min [S])."""
    mn = np.minimum(x.min(axis=1), _F32(0))
    mx = x.max(axis=1)
    flat = mx == mn
    sum_w, sum_x = _seq_sum(w), _seq_sum(w * x)

    def quant(iscale, mn):
        return np.clip(nearest_int(iscale[:, None] * (x - mn[:, None])), 0, nmax)

    def error(scale, q, mn):
        diff = (scale[:, None] * q.astype(_F32) + mn[:, None]) - x
        return _seq_sum(w * (np.abs(diff) if use_mad else diff * diff))

    with np.errstate(all="ignore"):
        iscale = _F32(nmax) / (mx - mn)
        scale = _F32(1) / iscale
        L = quant(iscale, mn)
        best = error(scale, L, mn)
        for step in range(nstep + 1):
            la = quant((_F32(rmin) + _F32(rdelta) * _F32(step) + _F32(nmax)) / (mx - mn), mn)
            lf = la.astype(_F32)
            sum_l, sum_l2, sum_xl = _seq_sum(w * lf), _seq_sum(w * lf * lf), _seq_sum(w * lf * x)
            D = sum_w * sum_l2 - sum_l * sum_l
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
            pos = this_min > 0
            this_scale = np.where(pos, sum_xl / sum_l2, this_scale)
            this_min = np.where(pos, _F32(0), this_min)
            cur = error(this_scale, la, this_min)
            better = (D > 0) & (cur < best)
            L = np.where(better[:, None], la, L)
            pick = ((cur, best), (this_scale, scale), (this_min, mn))
            best, scale, mn = (np.where(better, a, b) for a, b in pick)
    return np.where(flat[:, None], 0, L), np.where(flat, _F32(0), scale), -mn


def _q3(x, nmax):
    """make_q3_quants(do_rmse=true) per row: (L + nmax [S, n], scale [S])."""
    mx, amax = _max_abs(x)
    w = x * x
    with np.errstate(all="ignore"):
        L = np.clip(nearest_int((_F32(-nmax) / mx)[:, None] * x), -nmax, nmax - 1)
        lf = L.astype(_F32)
        sumlx, suml2 = _seq_sum(w * x * lf), _seq_sum(w * lf * lf)
        active = amax >= GROUP_MAX_EPS
        for _ in range(5):
            changed = np.zeros_like(active)
            for i in range(x.shape[1]):
                wi, li = w[:, i], L[:, i].astype(_F32)
                slx0, sl2 = sumlx - wi * x[:, i] * li, suml2 - wi * li * li
                new = np.clip(nearest_int(x[:, i] * sl2 / slx0), -nmax, nmax - 1)
                nf = new.astype(_F32)
                slx, sl2 = slx0 + wi * x[:, i] * nf, sl2 + wi * nf * nf
                better = (sl2 > 0) & (slx * slx * suml2 > sumlx * sumlx * sl2)
                take = active & (slx0 > 0) & (new != L[:, i]) & better
                L[:, i] = np.where(take, new, L[:, i])
                sumlx, suml2 = np.where(take, slx, sumlx), np.where(take, sl2, suml2)
                changed |= take
            active &= changed
            if not active.any():
                break
        scale = np.where(suml2 > 0, sumlx / suml2, _F32(0))
    zero = amax < GROUP_MAX_EPS
    return np.where(zero[:, None], 0, L + nmax), np.where(zero, _F32(0), scale)


def _qx(x, nmax):
    """make_qx_quants(rmse_type=1, no weights) per row: (L + nmax [S, n], scale [S])."""
    mx, amax = _max_abs(x)
    w = x * x

    def attempt(iscale):
        q = np.clip(nearest_int(iscale[:, None] * x), -nmax, nmax - 1)
        qf = q.astype(_F32)
        return q, _seq_sum(w * x * qf), _seq_sum(w * qf * qf)

    with np.errstate(all="ignore"):
        L, sumlx, suml2 = attempt(_F32(-nmax) / mx)
        scale = np.where(suml2 != 0, sumlx / suml2, _F32(0))
        best = scale * sumlx
        for step in (*range(-9, 0), *range(1, 10)):
            q, slx, sl2 = attempt(-(_F32(nmax) + _F32(0.1) * _F32(step)) / mx)
            take = (sl2 > 0) & (slx * slx > best * sl2)
            L = np.where(take[:, None], q, L)
            scale = np.where(take, slx / sl2, scale)
            best = np.where(take, scale * slx, best)
    zero = amax < GROUP_MAX_EPS
    return np.where(zero[:, None], 0, L + nmax), np.where(zero, _F32(0), scale)


def _f16(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # (GGML_FP32_TO_FP16 bytes, back to f32)
    return (b := codec.f16_bytes(v)), b.view("<f2")[..., 0].astype(_F32)


def quantize_blocks(fmt: Format, xb: np.ndarray) -> np.ndarray:
    """quantize_row_<fmt>_ref on super-blocks xb [nblocks, 256] f32 -> block bytes [nblocks, block_bytes]."""
    kind, nb = fmt.sub_scales, len(xb)
    sub, nmax = fmt.sub_block or QK_K, (1 << fmt.bits) - 1
    x = xb.reshape(-1, sub)
    out = np.zeros((nb, fmt.block_bytes), dtype=np.uint8)

    def put(name: str, v: np.ndarray) -> None:
        out[:, fmt.offsets[name] : fmt.offsets[name] + v.shape[-1]] = v

    zero_block = np.zeros(nb, bool)
    with np.errstate(all="ignore"):
        if kind is None:  # q8_k: q = min(127, nearest_int(-127/max * x)), d = 1/iscale
            mx, amax = _max_abs(xb)
            iscale = _F32(-127) / mx
            q = np.where(amax[:, None] == 0, 0, _i8(np.minimum(127, nearest_int(iscale[:, None] * xb))))
            put("d", np.where(amax == 0, _F32(0), _F32(1) / iscale).astype("<f4")[:, None].view(np.uint8))
            put("bsums", q.reshape(nb, -1, 16).sum(axis=2).astype("<i2").view(np.uint8))
            out |= codec.pack_codes(q, fmt, q.size).reshape(nb, -1)
            return out
        if kind in ("nibbles", "k4"):  # a scale and a min per sub-block
            weights, rmin, rdelta, nstep, mad = _QKX2[fmt.name]
            w = np.abs(x) if weights == "abs" else np.sqrt(_seq_sum(x * x) / _F32(sub))[:, None] + np.abs(x)
            L, scales, mins = _qkx2(x, w, nmax, rmin, rdelta, nstep, mad)
            scales, mins = scales.reshape(nb, -1), mins.reshape(nb, -1)
            top = _F32(15 if kind == "nibbles" else 63)
            max_scale, max_min = np.maximum(scales.max(axis=1), 0), np.maximum(mins.max(axis=1), 0)
            ls = nearest_int(np.where(max_scale > 0, top / max_scale, 0)[:, None] * scales) & 0xFF
            lm = nearest_int(np.where(max_min > 0, top / max_min, 0)[:, None] * mins) & 0xFF
            if kind == "k4":
                ls, lm = np.minimum(63, ls), np.minimum(63, lm)
            put(fmt.scales_field, encode_sub_scales(kind, ls, lm))
            (db, d16), (mb, m16) = _f16(max_scale / top), _f16(max_min / top)
            put("d", db), put("dmin", mb)
            sc, m = decode_sub_scales(kind, _field(out, fmt, fmt.scales_field))
            dl, ml = (d16[:, None] * sc.astype(_F32)).reshape(-1), (m16[:, None] * m.astype(_F32)).reshape(-1)
            fresh = np.clip(nearest_int((x + ml[:, None]) / dl[:, None]), 0, nmax)
        else:  # q3_k (k3) / q6_k (i8): signed scales, no min
            k3 = kind == "k3"
            half = (nmax + 1) // 2
            L, scales = _q3(x, half) if k3 else _qx(x, half)
            scales = scales.reshape(nb, -1)
            max_scale, max_abs = _max_abs(scales)
            iscale = (_F32(-32) if k3 else _F32(-128)) / max_scale
            q = nearest_int(iscale[:, None] * scales)
            if k3:
                live = max_scale != 0
                sc = np.where(live[:, None], np.clip(_i8(q), -32, 31), -32)
            else:
                zero_block = max_abs < GROUP_MAX_EPS
                sc = _i8(np.minimum(127, q))
                live = ~zero_block
            put(fmt.scales_field, encode_sub_scales(kind, sc, None))
            db, d16 = _f16(np.where(live, _F32(1) / iscale, _F32(0)))
            put("d", db)
            sc = decode_sub_scales(kind, _field(out, fmt, fmt.scales_field))[0]
            dl = (d16[:, None] * sc.astype(_F32)).reshape(-1)
            fresh = np.clip(nearest_int(x / dl[:, None]), -half, half - 1) + half
        L = np.where((dl != 0)[:, None], fresh, L)  # a sub-block whose scale is 0 keeps the search's codes
    out |= codec.pack_codes(L, fmt, L.size).reshape(nb, -1)
    out[zero_block] = 0  # q6_k: a block of (near) zeros is all zero bytes
    return out
FAMILY_NAME = "kquant"


class KQuant(Gguf):
    name = FAMILY_NAME
    sample_shape = (7, 512)  # whole super-blocks only

    def check_row(self, row: Format, need) -> None:
        need(row.inline and row.blocksizes == (QK_K,), "block", f"one {QK_K}-element super-block")
        total = sum(f.nbytes for f in row.fields)
        need(total == row.block_bytes, "block_bytes", f"declared {row.block_bytes}, fields sum to {total}")
        need(row.has_field("d") and row.member("d").ctype in ("f16", "f32") and row.member("d").count == 1, "fields",
             "the super-block scale 'd' is one f16 (f32 for the activation format q8_k)")  # fmt: skip
        need(row.scale == "d" or (row.scale == "d_m" and row.member("dmin") == Field("dmin", "f16")), "scale",
             "K-quants scale by 'd', and by an f16 'dmin' for the mins of scale d_m")  # fmt: skip
        need(row.sub_scales in (None, "k4", "k3", "nibbles", "i8"), "sub_scales", "integer sub-block scales")
        need(row.sub_scales is not None or row.code == "signed", "sub_scales", "only q8_k has none")
        need(row.pack == "split" or row.per_byte == 1, "pack", "codes of several bits are split-packed")
        need(row.high_bit_field is None or row.high_unit is not None, "high_unit", "high bits are split-packed")

    def chunk_limit(self, fmt: Format, blocksize: int, scale_mode) -> int:
        return sub_block_limit(fmt)

    def quantize_blocks(self, fmt: Format, blocks: np.ndarray) -> np.ndarray:
        return quantize_blocks(fmt, blocks)


def sub_block_limit(fmt: Format) -> int:
    """Most elements a chunk may hold: one sub-block scale, one slot run of every split plane."""
    return min([fmt.sub_block or fmt.block] + [p.run for p in fmt.planes if p.pack == "split"])


FAMILY = register_family(KQuant())


def row(name: str, gtype: int, fields: tuple[Field, ...], nbytes: int, doc: str, **kw) -> Format:
    return Format(name=name, family=FAMILY_NAME, doc=doc, block=QK_K, blocksizes=(QK_K,), fields=fields,
                  block_bytes=nbytes, msb_first=False, gguf_type=gtype, **{"pack": "split", **kw})  # fmt: skip


_F16, _U8, _I8 = "f16", "u8", "i8"
ROWS: tuple[Format, ...] = (
    row("q2_k", 10, (Field("scales", _U8, 16), Field("qs", _U8, 64), Field("d", _F16), Field("dmin", _F16)), 84,
        "GGUF Q2_K: q * d*sc - dmin*m, 4-bit scale/min per 16", bits=2, code="unsigned", scale="d_m", unit=128,
        sub_block=16, sub_scales="nibbles", scales_field="scales"),
    row("q3_k", 11, (Field("hmask", _U8, 32), Field("qs", _U8, 64), Field("scales", _U8, 12), Field("d", _F16)),
        110, "GGUF Q3_K: (q - 4) * d*sc, high bits in hmask, 6-bit scales per 16", bits=3, code="unsigned",
        zero=4, scale="d", unit=128, high_bit_field="hmask", high_unit=256, sub_block=16, sub_scales="k3",
        scales_field="scales"),
    row("q4_k", 12, (Field("d", _F16), Field("dmin", _F16), Field("scales", _U8, 12), Field("qs", _U8, 128)), 144,
        "GGUF Q4_K: q * d*sc - dmin*m, 6-bit scale/min per 32", bits=4, code="unsigned", scale="d_m", unit=64,
        sub_block=32, sub_scales="k4", scales_field="scales"),
    row("q5_k", 13, (Field("d", _F16), Field("dmin", _F16), Field("scales", _U8, 12), Field("qh", _U8, 32),
                     Field("qs", _U8, 128)), 176,
        "GGUF Q5_K: q * d*sc - dmin*m, fifth bits in qh, 6-bit scale/min per 32", bits=5, code="unsigned",
        scale="d_m", unit=64, high_bit_field="qh", high_unit=256, sub_block=32, sub_scales="k4",
        scales_field="scales"),
    row("q6_k", 14, (Field("ql", _U8, 128), Field("qh", _U8, 64), Field("scales", _I8, 16), Field("d", _F16)), 210,
        "GGUF Q6_K: (q - 32) * d*sc, 2 high bits in qh, int8 scales per 16", bits=6, code="unsigned", zero=32,
        scale="d", low_field="ql", unit=128, high_bit_field="qh", high_bits=2, high_unit=128, sub_block=16,
        sub_scales="i8", scales_field="scales"),
    row("q8_k", 15, (Field("d", "f32"), Field("qs", _I8, 256), Field("bsums", "i16", 16)), 292,
        "GGUF Q8_K: q * d (f32 d), int16 sums per 16; the K-quant activation format", bits=8, pack="interleaved",
        code="signed", scale="d"),
)  # fmt: skip

# ggml's GGML_QUANT_SIZES for these rows, restated as an independent check.
GGML_QUANT_SIZES = {"q2_k": (256, 84), "q3_k": (256, 110), "q4_k": (256, 144), "q5_k": (256, 176),
                    "q6_k": (256, 210), "q8_k": (256, 292)}  # fmt: skip
assert {f.name: (f.block, f.block_bytes) for f in ROWS} == GGML_QUANT_SIZES


def search(fmt: Format) -> dict | None:
    """The reference quantizer's rule for a K-quant row, as the device quantizer (ops/quantize.py)
    renders it: llama.cpp's routine and its parameters; None for rows of other families."""
    if fmt.family != FAMILY_NAME:
        return None
    kind, nmax = fmt.sub_scales, (1 << fmt.bits) - 1
    if kind is None:
        return dict(search="q8", nmax=127)
    if kind in ("nibbles", "k4"):
        weights, rmin, rdelta, nstep, mad = _QKX2[fmt.name]
        return dict(search="qkx2", nmax=nmax, weights=weights, rmin=rmin, rdelta=rdelta, nstep=nstep, mad=mad,
                    top=15 if kind == "nibbles" else 63, clamp_top=kind == "k4")  # fmt: skip
    half = (nmax + 1) // 2  # eps: GROUP_MAX_EPS as a C literal
    if kind == "k3":
        return dict(search="q3", nmax=half, sub_min=-32, sub_max=31, eps="1e-15")
    return dict(search="qx", nmax=half, sub_min=-128, sub_max=127, eps="1e-15")
