"""FP4 (E2M1) blocks with a shared scale, as gguf-py and ggml lay them out: MXFP4 (OCP MX: 32
elements, one E8M0 exponent byte `e`, then 16 bytes of codes) and NVFP4 (64 elements, four UE4M3
scale bytes `d` for sub-blocks of 16, then 32 bytes of codes). In a block (MXFP4) or sub-block
(NVFP4) of 2k elements, byte j holds element j in its low nibble and element j+k in its high one.

Values follow ggml's convention: the table is E2M1 doubled (kvalues_mxfp4: 0 1 2 3 4 6 8 12, bit 3
the sign) and the scale halved, value = f32(table[q] * scale), scale = 2^(e - 128) for MXFP4
(e < 2: the subnormals 2^-128, 2^-127; e = 255 is 2^127, not NaN) and UE4M3 / 2 for NVFP4 (codes
0 and 0x7F are 0; the byte's top bit is ignored). Exact in f32: the products are small integers
times powers of two.

Quantizers: MXFP4 is gguf-py's (e = floor(log2(amax)) - 2 + 127, evaluated in numpy float32 as
gguf.quants does, then the nearest code: argmin |table * scale - x|, first on ties); NVFP4 is
ggml's quantize_row_nvfp4_ref (gguf-py has none): per sub-block scale ue4m3(amax / 6), nearest
code as above.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ..errors import QKGenValueError
from . import codec
from .family import register_family
from .gguf import Gguf
from .kquant import Plane, _field, pack_planes, unpack_planes
from .qtensor import QTensor
from .row import Field, Format

_F32 = np.float32
FAMILY_NAME = "mxfp4"
E2M1_X2 = tuple(float(v) for v in (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12))


# Facts to move into the row (row.py has no field for them yet): the scale field, its encoding
# and the elements it scales; where the codes sit (split packing within units of `unit` elements).
SCALES = MappingProxyType({"mxfp4": ("e", "e8m0_half", 32), "nvfp4": ("d", "ue4m3_half", 16)})
PLANES = MappingProxyType({"mxfp4": (Plane("qs", 4, 32),), "nvfp4": (Plane("qs", 4, 16),)})


def e8m0_half(e: np.ndarray) -> np.ndarray:
    """ggml_e8m0_to_fp32_half: 2^(e - 128) as float32 bits (e < 2: the subnormals)."""
    e = np.asarray(e).astype(np.uint32)
    return np.where(e < 2, np.uint32(0x00200000) << e, (e - 1) << np.uint32(23)).astype(np.uint32).view(_F32)


def ue4m3_half(x: np.ndarray) -> np.ndarray:
    """ggml_ue4m3_to_fp32: half the unsigned E4M3 value (bias 7); 0 and 0x7F decode to 0."""
    x = np.asarray(x).astype(np.int32)
    exp, man = (x >> 3) & 0xF, (x & 7).astype(_F32)
    raw = np.where(exp == 0, np.ldexp(man, -9), np.ldexp(_F32(1) + man / _F32(8), exp - 7)).astype(_F32)
    return np.where((x == 0) | (x == 0x7F), _F32(0), raw * _F32(0.5)).astype(_F32)


def ue4m3_code(x: np.ndarray) -> np.ndarray:
    """ggml_fp32_to_ue4m3: 0 unless x > 0; x clamped to 448; below the normal range trunc(x * 512 +
    0.5) capped at 7; else the mantissa's top 3 bits plus the next one (carry into the exponent),
    an exponent of 15 or more giving 0x7E."""
    x = np.asarray(x, dtype=_F32)
    pos, x = x > 0, np.minimum(x, _F32(448))
    bits = x.view(np.uint32).astype(np.int64)
    e0, man = ((bits >> 23) & 0xFF) - 120, ((bits >> 20) & 7) + ((bits >> 19) & 1)
    e, man = np.where(man > 7, e0 + 1, e0), np.where(man > 7, 0, man)
    with np.errstate(invalid="ignore"):
        sub = np.minimum(np.trunc(x * _F32(512) + _F32(0.5)), 7)
    sub = np.where(sub < 1, 0, sub).astype(np.int64)
    normal = np.where(e >= 15, 0x7E, (e << 3) | man)
    return np.where(pos, np.where(e0 <= 0, sub, normal), 0).astype(np.uint8)


def _nearest(x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """best_index_mxfp4: the first code minimizing |table[q] * scale - x| (float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        errs = np.abs(scale[:, None, None] * np.asarray(E2M1_X2, dtype=_F32) - x[..., None])
    return errs.argmin(axis=-1)


class Fp4(Gguf):
    name = FAMILY_NAME
    sample_shape = (7, 192)

    def check_row(self, row: Format, need) -> None:
        need(row.name in SCALES, "name", f"no FP4 facts for {row.name!r}; allowed: {', '.join(SCALES)}")
        field, _, per = SCALES[row.name]
        need(row.inline and len(row.blocksizes) == 1 and row.block % per == 0, "block", f"whole sub-blocks of {per}")
        need(row.code == "table" and row.table == E2M1_X2, "table", "E2M1 doubled (ggml's kvalues_mxfp4)")
        need(row.has_field(field) and row.member(field).nbytes == row.block // per, "fields",
             f"{field!r}: one scale byte per {per} elements")  # fmt: skip
        need(row.member("qs").nbytes * 2 == row.block, "fields", "'qs': two codes per byte")
        total = sum(f.nbytes for f in row.fields)
        need(total == row.block_bytes, "block_bytes", f"declared {row.block_bytes}, fields sum to {total}")

    def chunk_limit(self, fmt: Format, blocksize: int, scale_mode) -> int:  # one slot run of a unit
        return PLANES[fmt.name][0].unit // 2

    def element_scales(self, qt: QTensor, data: np.ndarray):
        fmt = qt.format
        field, kind, per = SCALES[fmt.name]
        raw = _field(np.asarray(data).reshape(-1, fmt.block_bytes), fmt, field)
        scale = e8m0_half(raw) if kind == "e8m0_half" else ue4m3_half(raw)
        return np.repeat(scale.reshape(-1), per), None

    def unpack_codes(self, fmt: Format, data: np.ndarray, n: int) -> np.ndarray:  # a hook family.py lacks
        return unpack_planes(fmt, PLANES[fmt.name], data, n)

    def quantize_blocks(self, fmt: Format, blocks: np.ndarray) -> np.ndarray:
        return quantize_blocks(fmt, blocks)


def quantize_blocks(fmt: Format, xb: np.ndarray) -> np.ndarray:
    """Blocks xb [nblocks, block] f32 -> block bytes [nblocks, block_bytes] (module docstring)."""
    field, kind, per = SCALES[fmt.name]
    sub = xb.reshape(-1, per)
    amax = np.abs(sub).max(axis=1)
    if kind == "e8m0_half":  # gguf.quants.MXFP4.quantize_blocks' float32 expression
        with np.errstate(divide="ignore"):
            stored = np.where(amax > 0, np.floor(np.log2(amax)) - 2 + 127, 0).astype(np.uint8)
        scale = e8m0_half(stored)
    else:
        stored = ue4m3_code(amax / _F32(6))
        scale = ue4m3_half(stored)
    out = np.zeros((len(xb), fmt.block_bytes), dtype=np.uint8)
    at = fmt.offsets[field]
    out[:, at : at + fmt.block // per] = stored.reshape(len(xb), -1)
    codes = _nearest(sub, scale).reshape(len(xb), -1)
    pack_planes(fmt, PLANES[fmt.name], codes.astype(np.int64), out)
    return out


FAMILY = register_family(Fp4())


def row(name: str, gtype: int, block: int, fields: tuple[Field, ...], nbytes: int, doc: str) -> Format:
    return Format(name=name, family=FAMILY_NAME, doc=doc, bits=4, block=block, blocksizes=(block,), pack="split",
                  msb_first=False, code="table", scale="d", table=E2M1_X2, fields=fields, block_bytes=nbytes,
                  gguf_type=gtype)  # fmt: skip


ROWS: tuple[Format, ...] = (
    row("mxfp4", 39, 32, (Field("e", "u8"), Field("qs", "u8", 16)), 17,
        "MXFP4 (OCP MX): E2M1 codes, one E8M0 exponent per 32; j and j+16 share byte j"),
    row("nvfp4", 40, 64, (Field("d", "u8", 4), Field("qs", "u8", 32)), 36,
        "NVFP4: E2M1 codes, a UE4M3 scale per 16; in each 16, j and j+8 share a byte"),
)  # fmt: skip

GGML_QUANT_SIZES = {"mxfp4": (32, 17), "nvfp4": (64, 36)}  # ggml's sizes, restated as a check
assert {f.name: (f.block, f.block_bytes) for f in ROWS} == GGML_QUANT_SIZES
