"""The format table: one frozen row per format qkgen knows, built by its family's constructor.

Every fact a kernel template or a reference codec needs is a field of a row (or derived from its
fields); templates and codecs never hard-code a block size, a nibble order or a table value.
"""

from __future__ import annotations

import numpy as np

from . import bnb4, bnb8, gguf, kquant, mxfp4, plain_int
from .row import Field, Format


def _dynamic_map() -> tuple[float, ...]:
    """bitsandbytes' signed 8-bit dynamic-exponent code (Dettmers 2015), exactly in float32.

    For exponent i in 0..6, 2**i + 1 boundaries linspace(0.1, 1) in float32, their midpoints
    scaled by 10**(i-6), both signs; then 0 and 1. Sorted: 256 values. linspace is evaluated from
    both ends (first half from the start, second half from the end), as torch does.
    """
    vals: list[np.float32] = []
    for i in range(7):
        n = 2**i + 1
        k = np.arange(n)
        step = (np.float32(1.0) - np.float32(0.1)) / np.float32(n - 1)
        bounds = np.where(k < n // 2, np.float32(0.1) + k * step, np.float32(1.0) - (n - 1 - k) * step)
        bounds = bounds.astype(np.float32)
        means = (bounds[:-1] + bounds[1:]) / np.float32(2)
        scaled = np.float32(10.0 ** (i - 6)) * means
        vals += list(scaled) + list(-scaled)
    vals += [np.float32(0.0), np.float32(1.0)]
    return tuple(float(v) for v in np.sort(np.array(vals, dtype=np.float32)))


# bitsandbytes' NF4 levels (QLoRA, normal-float quantiles), float32 values.
NF4_TABLE = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)  # fmt: skip

# bitsandbytes' FP4: bit 3 is the sign, bits 0-2 index these magnitudes (x 1/12).
_FP4_MAGNITUDES = (0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0)
# Code 8 (sign set, magnitude 0) is -0.0, as bitsandbytes' CUDA kernels decode it (its CPU path and
# its code tensor say +0.0; the two compare equal, only the sign bit of a zero output differs).
FP4_TABLE = tuple(float(np.float32(s * m / 12.0)) for s in (1.0, -1.0) for m in _FP4_MAGNITUDES)

DYNAMIC8_TABLE = _dynamic_map()

_F16, _U8, _I8 = "f16", "u8", "i8"

ROWS: tuple[Format, ...] = (
    bnb4.row("nf4", NF4_TABLE, DYNAMIC8_TABLE, "bitsandbytes NF4: 4-bit normal-float codes, f32 absmax per block"),
    bnb4.row("fp4", FP4_TABLE, DYNAMIC8_TABLE, "bitsandbytes FP4: sign bit + 3-bit magnitude, f32 absmax per block"),
    bnb8.row("blockwise8", DYNAMIC8_TABLE,
             "bitsandbytes 8-bit blockwise dynamic (General8bit): 256-entry code, f32 absmax per block"),
    gguf.row("q4_0", 2, (Field("d", _F16), Field("qs", _U8, 16)), 18,
             "GGUF Q4_0: (q - 8) * d", bits=4, pack="split", code="unsigned", zero=8, scale="d"),
    gguf.row("q4_1", 3, (Field("d", _F16), Field("m", _F16), Field("qs", _U8, 16)), 20,
             "GGUF Q4_1: q * d + m", bits=4, pack="split", code="unsigned", scale="d_m"),
    gguf.row("q5_0", 6, (Field("d", _F16), Field("qh", _U8, 4), Field("qs", _U8, 16)), 22,
             "GGUF Q5_0: (q - 16) * d, fifth bits in qh", bits=5, pack="split", code="unsigned",
             zero=16, scale="d", high_bit_field="qh"),
    gguf.row("q5_1", 7, (Field("d", _F16), Field("m", _F16), Field("qh", _U8, 4), Field("qs", _U8, 16)),
             24, "GGUF Q5_1: q * d + m, fifth bits in qh", bits=5, pack="split", code="unsigned",
             scale="d_m", high_bit_field="qh"),
    gguf.row("q8_0", 8, (Field("d", _F16), Field("qs", _I8, 32)), 34,
             "GGUF Q8_0: q * d; 34-byte blocks are only 2-byte aligned", bits=8, pack="interleaved",
             code="signed", scale="d"),
    gguf.row("q8_1", 9, (Field("d", _F16), Field("s", _F16), Field("qs", _I8, 32)), 36,
             "GGUF Q8_1: q * d with s = d * sum(q); the activation format of the integer-dot path",
             bits=8, pack="interleaved", code="signed", scale="d"),
    plain_int.row("int8", 8, "8-bit two's complement, f32 scale per tensor/row/group", code="signed"),
    plain_int.row("int4", 4, "4-bit two's complement, element 2i in the low nibble", code="signed"),
    plain_int.row("int2", 2, "2-bit, four per byte low bits first, value = field - 2", code="unsigned", zero=2),
    plain_int.row("int1", 1, "1-bit, eight per byte LSB first, 1 -> +1, 0 -> -1", code="unsigned", step=2,
                  zero=1),
    *kquant.ROWS,  # Q2_K .. Q6_K, Q8_K: 256-element super-blocks with sub-block scales
    *mxfp4.ROWS,  # MXFP4, NVFP4: E2M1 codes with E8M0 / UE4M3 scales
)  # fmt: skip

# ggml's GGML_QUANT_SIZES, restated as an independent check of the rows above.
GGML_QUANT_SIZES = {"q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24), "q8_0": (32, 34),
                    "q8_1": (32, 36)}  # fmt: skip
GGML_QUANT_SIZES.update(kquant.GGML_QUANT_SIZES, **mxfp4.GGML_QUANT_SIZES)
assert {f.name: (f.block, f.block_bytes) for f in ROWS if f.gguf_type is not None} == GGML_QUANT_SIZES
