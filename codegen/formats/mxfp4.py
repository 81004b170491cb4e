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

What adding the family touched beyond this module (issue 13; lines in docs/architecture.md): with
the K-quants' row vocabulary in place, only its two scale encodings (`e8m0_half`, `ue4m3_half`:
subscales.py and decode.jinja's `sub_scale`, about 25 lines each), NVFP4's `unit` of 16, and its
rows in table.py.
"""

from __future__ import annotations

import numpy as np

from . import codec
from .family import register_family
from .gguf import Gguf
from .kquant import sub_block_limit
from .row import Field, Format
from .subscales import e8m0_half, ue4m3_code, ue4m3_half

_F32 = np.float32
FAMILY_NAME = "mxfp4"
E2M1_X2 = tuple(float(v) for v in (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12))


def _nearest(x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """best_index_mxfp4: the first code minimizing |table[q] * scale - x| (float32)."""
    with np.errstate(over="ignore", invalid="ignore"):
        errs = np.abs(scale[:, None, None] * np.asarray(E2M1_X2, dtype=_F32) - x[..., None])
    return errs.argmin(axis=-1)


class Fp4(Gguf):
    name = FAMILY_NAME
    sample_shape = (7, 192)

    def check_row(self, row: Format, need) -> None:
        need(row.inline and len(row.blocksizes) == 1, "block", "one fixed block size")
        need(row.code == "table" and row.table == E2M1_X2, "table", "E2M1 doubled (ggml's kvalues_mxfp4)")
        need(row.sub_scales in ("e8m0_half", "ue4m3_half"), "sub_scales", "a float scale per sub-block")
        need(row.pack == "split" and row.high_bit_field is None, "pack", "two split-packed codes per byte")
        total = sum(f.nbytes for f in row.fields)
        need(total == row.block_bytes, "block_bytes", f"declared {row.block_bytes}, fields sum to {total}")

    def chunk_limit(self, fmt: Format, blocksize: int, scale_mode) -> int:  # one scale, one slot run
        return sub_block_limit(fmt)

    def quantize_blocks(self, fmt: Format, blocks: np.ndarray) -> np.ndarray:
        return quantize_blocks(fmt, blocks)


def quantize_blocks(fmt: Format, xb: np.ndarray) -> np.ndarray:
    """Blocks xb [nblocks, block] f32 -> block bytes [nblocks, block_bytes] (module docstring)."""
    sub = xb.reshape(-1, fmt.sub_block)
    amax = np.abs(sub).max(axis=1)
    if fmt.sub_scales == "e8m0_half":  # gguf.quants.MXFP4.quantize_blocks' float32 expression
        with np.errstate(divide="ignore"):
            stored = np.where(amax > 0, np.floor(np.log2(amax)) - 2 + 127, 0).astype(np.uint8)
        scale = e8m0_half(stored)
    else:
        stored = ue4m3_code(amax / _F32(6))
        scale = ue4m3_half(stored)
    codes = _nearest(sub, scale).reshape(len(xb), -1)
    out = codec.pack_codes(codes, fmt, codes.size).reshape(len(xb), -1)
    at = fmt.offsets[fmt.scales_field]
    out[:, at : at + fmt.sub_count] = stored.reshape(len(xb), -1)
    return out


FAMILY = register_family(Fp4())


def row(name: str, gtype: int, block: int, fields: tuple[Field, ...], nbytes: int, doc: str, **kw) -> Format:
    return Format(name=name, family=FAMILY_NAME, doc=doc, bits=4, block=block, blocksizes=(block,), pack="split",
                  msb_first=False, code="table", scale="d", table=E2M1_X2, fields=fields, block_bytes=nbytes,
                  gguf_type=gtype, **kw)  # fmt: skip


ROWS: tuple[Format, ...] = (
    row("mxfp4", 39, 32, (Field("e", "u8"), Field("qs", "u8", 16)), 17,
        "MXFP4 (OCP MX): E2M1 codes, one E8M0 exponent per 32; j and j+16 share byte j",
        sub_block=32, sub_scales="e8m0_half", scales_field="e"),
    row("nvfp4", 40, 64, (Field("d", "u8", 4), Field("qs", "u8", 32)), 36,
        "NVFP4: E2M1 codes, a UE4M3 scale per 16; in each 16, j and j+8 share a byte",
        unit=16, sub_block=16, sub_scales="ue4m3_half", scales_field="d"),
)  # fmt: skip

GGML_QUANT_SIZES = {"mxfp4": (32, 17), "nvfp4": (64, 36)}  # ggml's sizes, restated as a check
assert {f.name: (f.block, f.block_bytes) for f in ROWS} == GGML_QUANT_SIZES
