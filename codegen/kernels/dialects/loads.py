"""Loads of code runs into uint words, and stores of words: the widest accesses a run's alignment
allows (vector loads, words, 16-bit pairs or bytes), written through the dialect's spellings."""

from __future__ import annotations


class WordMoves:
    """The dialect's statements that move uint words between registers and global memory."""

    def load_u32(self, dst: str, src: str, nbytes: int, align: int, words: bool = False) -> str:
        """Statements that fill uint dst[nbytes/4] from the global bytes at src (load_u32)."""
        return load_u32(self, dst, src, nbytes, align, words)

    def store_u32(self, dst: str, src: str, nbytes: int, align: int) -> str:
        """Statements that store uint src[nbytes/4] to the global bytes at dst (store_u32)."""
        return store_u32(self, dst, src, nbytes, align)


def store_u32(d, dst: str, src: str, nbytes: int, align: int) -> str:
    """uint src[nbytes/4] to the global bytes at dst (align: a power of two dividing its address,
    at least 4), in the widest stores that allows."""
    assert nbytes % 4 == 0 and align >= 4, (nbytes, align)
    nw = nbytes // 4
    width = 4 if align >= 16 and nw % 4 == 0 else 2 if align >= 8 and nw % 2 == 0 else 1
    v = d.vec("uint", width) if width > 1 else "uint"
    items = (", ".join(f"{src}[{width * k + i}]" for i in range(width)) for k in range(nw // width))
    return "\n".join(f"{d.gptr_cast(v, dst, const=False)}[{k}] = {d.make_vec(v, it) if width > 1 else it};"
                     for k, it in enumerate(items))  # fmt: skip


def load_u32(d, dst: str, src: str, nbytes: int, align: int, words: bool = False) -> str:
    """Statements that fill uint dst[nbytes/4] from the global bytes at src (little-endian),
    with the widest loads that `align` (a power of two dividing src's address) allows. Vector
    loads go through named temporaries ({dst}_v0, ...). words (align 2, the 2 bytes before src
    readable): 4-byte loads, see _shifted_words; align 1 (the 3 bytes before src readable): see
    _funnel_words."""
    if nbytes == 2 and align >= 2:  # a half word (dequantize's 2-byte chunks): the low 16 bits of dst[0]
        return f"{dst}[0] = (uint){d.gptr_cast('ushort', src)}[0];"
    assert nbytes % 4 == 0, nbytes
    nw = nbytes // 4
    lines = []
    width = 4 if align >= 16 and nw % 4 == 0 else 2 if align >= 8 and nw % 2 == 0 else 1
    if width > 1:
        v = d.vec("uint", width)
        for k in range(nw // width):
            tmp = f"{dst}_v{k}"
            lines.append(f"const {v} {tmp} = {d.gptr_cast(v, src)}[{k}];")
            lines.append(" ".join(f"{dst}[{width * k + i}] = {d.vget(tmp, i)};" for i in range(width)))
    elif align >= 4:
        lines += [f"{dst}[{k}] = {d.gptr_cast('uint', src)}[{k}];" for k in range(nw)]
    elif align == 2 and words and nw > 1:
        return _shifted_words(d, dst, src, nw)
    elif align == 1 and words and nw > 1:
        return _funnel_words(d, dst, src, nw)
    elif align == 2:
        # 2-byte aligned blocks (q4_0, q5_0, q8_0): two 16-bit loads per word, never 4-byte ones.
        p = d.gptr_cast("ushort", src)
        lines += [f"{dst}[{k}] = (uint){p}[{2 * k}] | ((uint){p}[{2 * k + 1}] << 16);" for k in range(nw)]
    else:
        p = d.gptr_cast("uchar", src)
        pad = " " * (len(dst) + len(str(nw)) + 5)
        lines += [f"{dst}[{k}] = (uint){p}[{4 * k}] | ((uint){p}[{4 * k + 1}] << 8)\n"
                  f"{pad}| ((uint){p}[{4 * k + 2}] << 16) | ((uint){p}[{4 * k + 3}] << 24);" for k in range(nw)]  # fmt: skip
    return "\n".join(lines)


def _shifted_words(d, dst: str, src: str, nw: int) -> str:
    """A 2-byte aligned run of nw words as 4-byte loads from the word boundary at or 2 bytes
    below src, moved down 16 bits where src is not 4-aligned, its last 2 bytes by a 16-bit load
    (a word there could pass the buffer's end): nw + 1 loads where 16-bit pairs take 2 nw."""
    u = d.gptr_cast("uint", f"({src} - {dst}_sh / 8u)")
    lines = [f"const uint {dst}_sh = (uint)((size_t){src} & 2u) * 8u;  /* 16: the run starts 2 bytes past a word */",
             f"uint {dst}_u[{nw}];", f"for (uint k = 0; k < {nw}u; ++k) {dst}_u[k] = {u}[k];",
             f"const uint {dst}_t = (uint){d.gptr_cast('ushort', src)}[{2 * nw - 1}];"]  # fmt: skip
    for k in range(nw):
        nxt = f"{dst}_u[{k + 1}]" if k + 1 < nw else f"{dst}_t"
        lines.append(f"{dst}[{k}] = {dst}_sh ? ({dst}_u[{k}] >> 16) | ({nxt} << 16) : {dst}_u[{k}];")
    return "\n".join(lines)


def _funnel_words(d, dst: str, src: str, nw: int) -> str:
    """A run of nw words at any byte address as 4-byte loads from the word boundary at or below
    src, each output word put together from two of them (a funnel shift right by 8r bits, r = src
    % 4). The r bytes past the last whole word come from a 16-bit load at the even address 2 or 3
    bytes before the run's end and a byte load of its last byte, never from a word that could pass
    the buffer's end: nw + 2 loads where bytes take 4 nw."""
    u = d.gptr_cast("uint", f"({src} - {dst}_r)")
    lines = [f"const uint {dst}_r = (uint)((size_t){src} & 3u);  /* the run starts r bytes past a word */",
             f"uint {dst}_u[{nw}];", f"for (uint k = 0; k < {nw}u; ++k) {dst}_u[k] = {u}[k];",
             f"/* the r bytes after the last whole word: r = 1 the last byte, r = 2 the run's last 16 bits,",
             f"   r = 3 the 16 bits before its last byte and that byte (h: the 16 bits at an even address) */",
             f"const uint {dst}_h = (uint){d.gptr_cast('ushort', f'({src} + {4 * nw - 2}u - ({dst}_r & 1u))')}[0];",
             f"const uint {dst}_b = (uint){d.gptr_cast('uchar', src)}[{4 * nw - 1}];",
             f"const uint {dst}_t = {dst}_r == 1u ? {dst}_b : {dst}_r == 2u ? {dst}_h : {dst}_h | ({dst}_b << 16);"]  # fmt: skip
    for k in range(nw):
        nxt = f"{dst}_u[{k + 1}]" if k + 1 < nw else f"{dst}_t"
        lines.append(f"{dst}[{k}] = {d.funnel_r(f'{dst}_u[{k}]', nxt, f'{dst}_r * 8u')};")
    return "\n".join(lines)
