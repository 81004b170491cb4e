"""GGUF K-quants (Q2_K .. Q6_K, Q8_K): 256-element super-blocks laid out as ggml-common.h declares
them. Value = f32(f32(D * s_j) * q) - f32(Dmin * m_j), D/Dmin the super-block scales (f16; q8_k:
f32), s_j/m_j the integer scale/min of the element's sub-block (q3_k/q6_k: no min; q8_k: D * q), as
ggml's dequantize_row_q*_K and gguf-py compute it. Where code bits sit is locate(): each code plane
(qs or ql, and the high bits in qh/hmask) is a small split-packed Format whose block is its unit.

Reference quantizers: llama.cpp's quantize_row_q*_K_ref from its algorithm (make_qkx2_quants for
q2_k/q4_k/q5_k, make_q3_quants for q3_k, make_qx_quants for q6_k, amax/127 for q8_k), in numpy: every
float32 operation of the C source in its order (sequential sums, no fused multiply-add), ggml's
nearest_int emulated bit for bit. Equal bytes to ggml-quants.c built with -ffp-contract=off.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ..errors import QKGenValueError
from . import codec
from .family import family_of, register_family
from .gguf import Gguf
from .qtensor import QTensor, validate
from .row import Field, Format

_F32 = np.float32
QK_K = 256
GROUP_MAX_EPS = _F32(1e-15)


# ---- Facts to move into the row (row.py has no field for them yet); see the report / issue 13. ----


@dataclass(frozen=True)
class Plane:
    """`bits` of every code, at bit `shift` of the code, in inline field `field`: split-packed in
    units of `unit` elements (locate() of a Format whose block is the unit)."""

    field: str
    bits: int
    unit: int
    shift: int = 0


@dataclass(frozen=True)
class KFacts:
    planes: tuple[Plane, ...]  # low plane first
    sub_block: int  # elements per sub-block scale (QK_K: one scale for the super-block)
    sub_scales: str  # k4: 6-bit scale+min in 12 bytes; k3: 6-bit signed in 12; nibbles; i8; none
    d_type: str = "f16"  # super-block scale `d` (and `dmin`); q8_k: f32 d, i16 bsums, held as u8 bytes


ROW_FACTS = MappingProxyType({
    "q2_k": KFacts((Plane("qs", 2, 128),), 16, "nibbles"),
    "q3_k": KFacts((Plane("qs", 2, 128), Plane("hmask", 1, 256, 2)), 16, "k3"),
    "q4_k": KFacts((Plane("qs", 4, 64),), 32, "k4"),
    "q5_k": KFacts((Plane("qs", 4, 64), Plane("qh", 1, 256, 4)), 32, "k4"),
    "q6_k": KFacts((Plane("ql", 4, 128), Plane("qh", 2, 128, 4)), 16, "i8"),
    "q8_k": KFacts((Plane("qs", 8, 256),), QK_K, "none", "f32"),
})  # fmt: skip


class KRow(Format):
    """low_bits = bits - the high planes' bits (q6_k: 2 high bits). To go when row.py has `high_bits`."""

    @property
    def low_bits(self) -> int:
        facts = ROW_FACTS.get(self.name)
        high = sum(p.bits for p in facts.planes[1:]) if facts else int(self.high_bit_field is not None)
        return self.bits - high


@functools.lru_cache(maxsize=None)
def plane_format(fmt: Format, plane: Plane) -> Format:
    """The plane as a Format: block = its unit, its bytes as `qs`; codec (un)packs it by locate()."""
    nbytes = plane.unit * plane.bits // 8
    signed = fmt.code == "signed" and plane.bits == fmt.bits
    return Format(name=f"{fmt.name}_{plane.field}", family=FAMILY_NAME, doc=f"{fmt.name}: {plane.field}",
                  bits=plane.bits, block=plane.unit, blocksizes=(plane.unit,), msb_first=False, scale="d",
                  pack="split" if plane.bits < 8 else "interleaved", code="signed" if signed else "unsigned",
                  fields=(Field("qs", "u8", nbytes),), block_bytes=nbytes)  # fmt: skip


def _field(blocks: np.ndarray, fmt: Format, name: str) -> np.ndarray:
    at = fmt.offsets[name]
    return blocks[:, at : at + fmt.member(name).nbytes]


def unpack_planes(fmt: Format, planes: tuple[Plane, ...], data: np.ndarray, n: int) -> np.ndarray:
    """Raw codes of the first n elements: every plane's bits, unpacked by codec, at their shift."""
    blocks = np.asarray(data).reshape(-1, fmt.block_bytes)
    codes = np.zeros((blocks.shape[0], fmt.block), dtype=np.int32)
    for p in planes:
        raw = np.ascontiguousarray(_field(blocks, fmt, p.field)).reshape(-1)
        codes |= codec.unpack_codes(plane_format(fmt, p), raw, codes.size).reshape(codes.shape) << p.shift
    return codes.reshape(-1)[:n]


def pack_planes(fmt: Format, planes: tuple[Plane, ...], codes: np.ndarray, blocks: np.ndarray) -> None:
    """Write codes [nblocks, block] into the planes of blocks [nblocks, block_bytes]."""
    for p in planes:
        part = (codes >> p.shift) & ((1 << p.bits) - 1) if p.shift else codes
        packed = codec.pack_codes(part, plane_format(fmt, p), codes.size).reshape(len(blocks), -1)
        blocks[:, fmt.offsets[p.field] : fmt.offsets[p.field] + packed.shape[1]] = packed


def dequantize(qt: QTensor) -> np.ndarray:
    """float32 values: reference.dequantize's rule, codes from the family's unpack_codes hook."""
    validate(qt)
    data, fam = codec.host_array(qt.data), family_of(qt.format)
    unpack = getattr(fam, "unpack_codes", codec.unpack_codes)  # families without the hook: locate() per block
    values = codec.code_values(qt.format, unpack(qt.format, data, qt.n))
    scale, m = fam.element_scales(qt, data)
    with np.errstate(over="ignore", invalid="ignore"):
        out = values * scale
        return (out if m is None else out + m).reshape(qt.shape)


def _read_d(blocks: np.ndarray, fmt: Format, name: str) -> np.ndarray:
    if ROW_FACTS[fmt.name].d_type == "f32":
        return np.ascontiguousarray(_field(blocks, fmt, name)).view("<f4").reshape(-1).astype(_F32)
    return codec.read_f16(blocks, fmt, name)


def decode_sub_scales(kind: str, s: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Sub-block (scale, min) integers [nblocks, nsub] from the scales field bytes [nblocks, k]."""
    s = s.astype(np.int32)
    if kind == "nibbles":
        return s & 0xF, s >> 4
    if kind == "i8":
        return np.where(s >= 128, s - 256, s), None
    if kind == "k4":  # j < 4: s[j] & 63, s[j+4] & 63; else low nibbles of s[j+4], high bits of s[j-4], s[j]
        lo, mid, hi = s[:, 0:4], s[:, 4:8], s[:, 8:12]
        return (np.concatenate([lo & 63, (hi & 0xF) | ((lo >> 6) << 4)], axis=1),
                np.concatenate([mid & 63, (hi >> 4) | ((mid >> 6) << 4)], axis=1))  # fmt: skip
    if kind == "k3":  # low nibbles: s[j] (j < 8), s[j-8] >> 4; 2 high bits: s[8 + j%4] >> 2*(j//4)
        j = np.arange(16)
        low = np.where(j < 8, s[:, j % 8] & 0xF, s[:, j % 8] >> 4)
        high = (s[:, 8 + j % 4] >> (2 * (j // 4))) & 3
        return (low | (high << 4)) - 32, None
    raise QKGenValueError(f"sub_scales: {kind!r}")


def encode_sub_scales(kind: str, sc: np.ndarray, mn: np.ndarray | None) -> np.ndarray:
    """The inverse of decode_sub_scales (sc, mn already in their stored ranges)."""
    sc = sc.astype(np.int32)
    if kind == "nibbles":
        return ((sc | (mn << 4)) & 0xFF).astype(np.uint8)
    if kind == "i8":
        return (sc & 0xFF).astype(np.uint8)
    if kind == "k4":
        out = np.concatenate([sc[:, :4] | ((sc[:, 4:] >> 4) << 6), mn[:, :4] | ((mn[:, 4:] >> 4) << 6),
                              (sc[:, 4:] & 0xF) | ((mn[:, 4:] & 0xF) << 4)], axis=1)  # fmt: skip
        return out.astype(np.uint8)
    if kind == "k3":
        u = sc + 32
        out = np.zeros((len(u), 12), dtype=np.int32)
        out[:, :8] = (u[:, :8] & 0xF) | ((u[:, 8:] & 0xF) << 4)
        for j in range(16):
            out[:, 8 + j % 4] |= (u[:, j] >> 4) << (2 * (j // 4))
        return out.astype(np.uint8)
    raise QKGenValueError(f"sub_scales: {kind!r}")


def block_scales(fmt: Format, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(f32(D * s_j), f32(Dmin * m_j) or None) per sub-block [nblocks, nsub], as ggml computes them."""
    facts = ROW_FACTS[fmt.name]
    d = _read_d(blocks, fmt, "d")[:, None]
    if facts.sub_scales == "none":
        return d, None
    sc, mn = decode_sub_scales(facts.sub_scales, _field(blocks, fmt, "scales"))
    mins = None if mn is None else _read_d(blocks, fmt, "dmin")[:, None] * mn.astype(_F32)
    return d * sc.astype(_F32), mins


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
    facts, nb = ROW_FACTS[fmt.name], len(xb)
    sub, nmax = facts.sub_block, (1 << fmt.bits) - 1
    x = xb.reshape(-1, sub)
    out = np.zeros((nb, fmt.block_bytes), dtype=np.uint8)

    def put(name: str, v: np.ndarray) -> None:
        out[:, fmt.offsets[name] : fmt.offsets[name] + v.shape[-1]] = v

    zero_block = np.zeros(nb, bool)
    with np.errstate(all="ignore"):
        if facts.sub_scales == "none":  # q8_k: q = min(127, nearest_int(-127/max * x)), d = 1/iscale
            mx, amax = _max_abs(xb)
            iscale = _F32(-127) / mx
            q = np.where(amax[:, None] == 0, 0, _i8(np.minimum(127, nearest_int(iscale[:, None] * xb))))
            put("d", np.where(amax == 0, _F32(0), _F32(1) / iscale).astype("<f4")[:, None].view(np.uint8))
            put("bsums", q.reshape(nb, -1, 16).sum(axis=2).astype("<i2").view(np.uint8))
            pack_planes(fmt, facts.planes, q.astype(np.int64), out)
            return out
        if facts.sub_scales in ("nibbles", "k4"):  # a scale and a min per sub-block
            weights, rmin, rdelta, nstep, mad = _QKX2[fmt.name]
            w = np.abs(x) if weights == "abs" else np.sqrt(_seq_sum(x * x) / _F32(sub))[:, None] + np.abs(x)
            L, scales, mins = _qkx2(x, w, nmax, rmin, rdelta, nstep, mad)
            scales, mins = scales.reshape(nb, -1), mins.reshape(nb, -1)
            top = _F32(15 if facts.sub_scales == "nibbles" else 63)
            max_scale, max_min = np.maximum(scales.max(axis=1), 0), np.maximum(mins.max(axis=1), 0)
            ls = nearest_int(np.where(max_scale > 0, top / max_scale, 0)[:, None] * scales) & 0xFF
            lm = nearest_int(np.where(max_min > 0, top / max_min, 0)[:, None] * mins) & 0xFF
            if facts.sub_scales == "k4":
                ls, lm = np.minimum(63, ls), np.minimum(63, lm)
            put("scales", encode_sub_scales(facts.sub_scales, ls, lm))
            (db, d16), (mb, m16) = _f16(max_scale / top), _f16(max_min / top)
            put("d", db), put("dmin", mb)
            sc, m = decode_sub_scales(facts.sub_scales, _field(out, fmt, "scales"))
            dl, ml = (d16[:, None] * sc.astype(_F32)).reshape(-1), (m16[:, None] * m.astype(_F32)).reshape(-1)
            fresh = np.clip(nearest_int((x + ml[:, None]) / dl[:, None]), 0, nmax)
        else:  # q3_k (k3) / q6_k (i8): signed scales, no min
            k3 = facts.sub_scales == "k3"
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
            put("scales", encode_sub_scales(facts.sub_scales, sc, None))
            db, d16 = _f16(np.where(live, _F32(1) / iscale, _F32(0)))
            put("d", db)
            sc = decode_sub_scales(facts.sub_scales, _field(out, fmt, "scales"))[0]
            dl = (d16[:, None] * sc.astype(_F32)).reshape(-1)
            fresh = np.clip(nearest_int(x / dl[:, None]), -half, half - 1) + half
        L = np.where((dl != 0)[:, None], fresh, L)  # a sub-block whose scale is 0 keeps the search's codes
    pack_planes(fmt, facts.planes, L.reshape(nb, -1).astype(np.int64), out)
    out[zero_block] = 0  # q6_k: a block of (near) zeros is all zero bytes
    return out
FAMILY_NAME = "kquant"


class KQuant(Gguf):
    name = FAMILY_NAME
    sample_shape = (7, 512)  # whole super-blocks only

    def check_row(self, row: Format, need) -> None:
        facts = ROW_FACTS.get(row.name)
        need(facts is not None, "name", f"no K-quant facts for {row.name!r}; allowed: {', '.join(ROW_FACTS)}")
        need(row.inline and row.blocksizes == (QK_K,), "block", f"one {QK_K}-element super-block")
        total = sum(f.nbytes for f in row.fields)
        need(total == row.block_bytes, "block_bytes", f"declared {row.block_bytes}, fields sum to {total}")
        need(row.has_field("d") and row.scale in ("d", "d_m"), "scale", "K-quants scale by 'd' (and 'dmin')")
        need((row.scale == "d_m") == row.has_field("dmin"), "fields", "'dmin' goes with scale d_m")
        high = facts.planes[1].field if len(facts.planes) > 1 else None
        need(row.high_bit_field == high and row.low_bits == facts.planes[0].bits, "high_bit_field",
             "the first plane holds the low bits, high_bit_field names the second")  # fmt: skip
        for p in facts.planes:
            ok = row.has_field(p.field) and row.member(p.field).nbytes * 8 == QK_K * p.bits and QK_K % p.unit == 0
            need(ok, "fields", f"{p.field!r}: {p.bits} bits per element in units dividing {QK_K}")
        want = {"nibbles": QK_K // facts.sub_block, "i8": QK_K // facts.sub_block, "k4": 12, "k3": 12}
        need(facts.sub_scales == "none" or row.member("scales").nbytes == want[facts.sub_scales], "fields",
             "'scales' has the size of its encoding")  # fmt: skip

    def chunk_limit(self, fmt: Format, blocksize: int, scale_mode) -> int:  # one scale, one slot run
        low = ROW_FACTS[fmt.name].planes[0]
        return min(ROW_FACTS[fmt.name].sub_block, low.unit * low.bits // 8)

    def element_scales(self, qt: QTensor, data: np.ndarray):
        scale, m = block_scales(qt.format, np.asarray(data).reshape(-1, qt.format.block_bytes))
        per = ROW_FACTS[qt.format.name].sub_block
        m = None if m is None else -np.repeat(m, per, axis=1).reshape(-1)
        return np.repeat(scale, per, axis=1).reshape(-1), m

    def unpack_codes(self, fmt: Format, data: np.ndarray, n: int) -> np.ndarray:  # a hook family.py lacks
        return unpack_planes(fmt, ROW_FACTS[fmt.name].planes, data, n)

    def quantize_blocks(self, fmt: Format, blocks: np.ndarray) -> np.ndarray:
        return quantize_blocks(fmt, blocks)


FAMILY = register_family(KQuant())


def row(name: str, gtype: int, fields: tuple[Field, ...], nbytes: int, doc: str, **kw) -> Format:
    return KRow(name=name, family=FAMILY_NAME, doc=doc, block=QK_K, blocksizes=(QK_K,), fields=fields,
                block_bytes=nbytes, msb_first=False, gguf_type=gtype, **{"pack": "split", **kw})  # fmt: skip


_F16, _U8, _I8 = "f16", "u8", "i8"
ROWS: tuple[Format, ...] = (
    row("q2_k", 10, (Field("scales", _U8, 16), Field("qs", _U8, 64), Field("d", _F16), Field("dmin", _F16)), 84,
        "GGUF Q2_K: q * d*sc - dmin*m, 4-bit scale/min per 16", bits=2, code="unsigned", scale="d_m"),
    row("q3_k", 11, (Field("hmask", _U8, 32), Field("qs", _U8, 64), Field("scales", _U8, 12), Field("d", _F16)),
        110, "GGUF Q3_K: (q - 4) * d*sc, high bits in hmask, 6-bit scales per 16", bits=3, code="unsigned",
        zero=4, scale="d", high_bit_field="hmask"),
    row("q4_k", 12, (Field("d", _F16), Field("dmin", _F16), Field("scales", _U8, 12), Field("qs", _U8, 128)), 144,
        "GGUF Q4_K: q * d*sc - dmin*m, 6-bit scale/min per 32", bits=4, code="unsigned", scale="d_m"),
    row("q5_k", 13, (Field("d", _F16), Field("dmin", _F16), Field("scales", _U8, 12), Field("qh", _U8, 32),
                     Field("qs", _U8, 128)), 176,
        "GGUF Q5_K: q * d*sc - dmin*m, fifth bits in qh, 6-bit scale/min per 32", bits=5, code="unsigned",
        scale="d_m", high_bit_field="qh"),
    row("q6_k", 14, (Field("ql", _U8, 128), Field("qh", _U8, 64), Field("scales", _I8, 16), Field("d", _F16)), 210,
        "GGUF Q6_K: (q - 32) * d*sc, 2 high bits in qh, int8 scales per 16", bits=6, code="unsigned", zero=32,
        scale="d", high_bit_field="qh"),
    row("q8_k", 15, (Field("d", _U8, 4), Field("qs", _I8, 256), Field("bsums", _U8, 32)), 292,
        "GGUF Q8_K: q * d (f32 d), int16 sums per 16; the K-quant activation format", bits=8, pack="interleaved",
        code="signed", scale="d"),
)  # fmt: skip

# ggml's GGML_QUANT_SIZES for these rows, restated as an independent check.
GGML_QUANT_SIZES = {"q2_k": (256, 84), "q3_k": (256, 110), "q4_k": (256, 144), "q5_k": (256, 176),
                    "q6_k": (256, 210), "q8_k": (256, 292)}  # fmt: skip
assert {f.name: (f.block, f.block_bytes) for f in ROWS} == GGML_QUANT_SIZES
