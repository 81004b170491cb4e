"""The bytes one launch must move, with the formula and its numbers (the report prints both).

Each input is counted as read once and the output as written once: dequantize moves packed codes
+ statistics + n * sizeof(dtype); gemv moves packed codes + statistics + x (M * K * sizeof) + y
(M * N * sizeof); the dense torch product moves W (N * K * sizeof) + x + y.
"""

from __future__ import annotations

from qkgen.dtypes import get as dtype_row


def weight_bytes(qt) -> tuple[int, str]:
    """(bytes of qt's packed codes and statistics, the formula with its numbers)."""
    fmt, n, nb = qt.format, qt.n, qt.nblocks
    if fmt.inline:
        codes = f"blocks {nb}*{fmt.block_bytes} B (codes and scales inline)"
    else:
        codes = f"codes ceil({n}*{fmt.low_bits}/8) B"
    stats = qt.stats_bytes()
    if qt.nested:
        n2 = -(-nb // fmt.nested_block)
        st = f" + absmax_q {nb}*1 B + absmax2 {n2}*4 B + offset 4 B"
    elif qt.absmax is not None:
        st = f" + absmax {nb}*4 B"
    elif qt.scale is not None:
        st = f" + scale {stats // 4}*4 B"
    else:
        st = ""
    return qt.data_bytes + stats, f"{codes}{st}"


def dequantize_bytes(qt, dtype: str) -> tuple[int, str]:
    """(bytes one dequantize launch moves, the formula with its numbers)."""
    n, size = qt.n, dtype_row(dtype).size
    wbytes, wformula = weight_bytes(qt)
    total = wbytes + n * size
    return total, f"{wformula} + out {n}*{size} B = {total} B"


def gemv_bytes(qt, m: int, dtype: str) -> tuple[int, str]:
    """(bytes one y = x @ W.T launch moves, the formula with its numbers): W's packed codes and
    statistics + x (M * K * sizeof) + y (M * N * sizeof), each read or written once."""
    n_out, k = qt.shape
    size = dtype_row(dtype).size
    wbytes, wformula = weight_bytes(qt)
    total = wbytes + m * k * size + m * n_out * size
    return total, f"{wformula} + x {m}*{k}*{size} B + y {m}*{n_out}*{size} B = {total} B"


def dense_gemv_bytes(n_out: int, k: int, m: int, dtype: str) -> tuple[int, str]:
    """(bytes, formula) of the dense product: W N * K * sizeof + x + y."""
    size = dtype_row(dtype).size
    total = n_out * k * size + m * k * size + m * n_out * size
    return total, (f"dense W {n_out}*{k}*{size} B + x {m}*{k}*{size} B + y {m}*{n_out}*{size} B "
                   f"= {total} B")  # fmt: skip
