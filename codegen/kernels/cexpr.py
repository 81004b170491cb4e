"""Symbolic unsigned indices: the format's own Python rules, evaluated into C expressions.

`formats.row.locate()` says where an element's code sits using only +, -, *, // and %. Called
with a Sym instead of a number, it returns the C expression a template needs, so kernels and the
reference codec share one rule. A Sym is a linear form over named unsigned variables with known
upper bounds (for example a chunk's element index `i < ept`); operations that a bound makes exact
are simplified away, the rest become C text. Constants fold, and `* 1`, `+ 0`, `>> 0` never
appear.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Sym:
    """sum(coef * var) + const over unsigned C variables; `bounds[var]` is an exclusive upper bound
    of var (None: unknown). `text` set means an opaque C expression (then terms are empty)."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0
    bounds: tuple[tuple[str, int | None], ...] = ()

    @staticmethod
    def var(name: str, bound: int | None = None) -> Sym:
        return Sym(((name, 1),), 0, ((name, bound),))

    # ---- structure ----
    def _bound(self, name: str) -> int | None:
        return dict(self.bounds).get(name)

    def max_value(self) -> int | None:
        """Largest value the form can take, if every variable is bounded (coefficients >= 0)."""
        top = self.const
        for name, coef in self.terms:
            b = self._bound(name)
            if b is None or coef < 0:
                return None
            top += coef * (b - 1)
        return top

    def _merge(self, other: Sym, sign: int) -> Sym:
        coefs = dict(self.terms)
        for name, c in other.terms:
            coefs[name] = coefs.get(name, 0) + sign * c
        terms = tuple((n, c) for n, c in coefs.items() if c)
        bounds = tuple(dict(self.bounds, **dict(other.bounds)).items())
        return Sym(terms, self.const + sign * other.const, bounds)

    @staticmethod
    def lift(x: int | Sym) -> Sym:
        return x if isinstance(x, Sym) else Sym((), int(x), ())

    # ---- arithmetic ----
    def __add__(self, other: int | Sym) -> Sym:
        return self._merge(Sym.lift(other), 1)

    __radd__ = __add__

    def __sub__(self, other: int | Sym) -> Sym:
        return self._merge(Sym.lift(other), -1)

    def __rsub__(self, other: int) -> Sym:
        return Sym.lift(other)._merge(self, -1)

    def __mul__(self, k: int) -> Sym:
        assert isinstance(k, int), "symbolic indices scale by constants only"
        return Sym(tuple((n, c * k) for n, c in self.terms if c * k), self.const * k, self.bounds)

    __rmul__ = __mul__

    def _split(self, k: int) -> tuple[Sym, Sym]:
        """(the part whose coefficients are multiples of k, the rest)."""
        whole = tuple((n, c) for n, c in self.terms if c % k == 0)
        rest = tuple((n, c) for n, c in self.terms if c % k)
        q, r = divmod(self.const, k)
        return Sym(whole, q * k, self.bounds), Sym(rest, r, self.bounds)

    def __floordiv__(self, k: int) -> Sym:
        if k == 1:
            return self
        whole, rest = self._split(k)
        top = rest.max_value()
        base = Sym(tuple((n, c // k) for n, c in whole.terms), whole.const // k, self.bounds)
        if top is not None and top < k:  # the remainder part never reaches k
            return base
        return base + Sym.opaque(f"{rest.c()} / {k}u", self.bounds)

    def __mod__(self, k: int) -> Sym:
        if k == 1:
            return Sym.lift(0)
        _, rest = self._split(k)
        top = rest.max_value()
        if top is not None and top < k:
            return rest
        return Sym.opaque(f"{rest.c()} % {k}u", self.bounds)

    @staticmethod
    def opaque(text: str, bounds: tuple = ()) -> Sym:
        return Sym(((f"({text})", 1),), 0, bounds)

    # ---- C text ----
    def c(self) -> str:
        """The C expression (unsigned arithmetic); more than one token comes parenthesized."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and not self.const:
            return self.terms[0][0]  # a variable, or an opaque expression already in parentheses
        if not self.terms:
            assert self.const >= 0, "unsigned indices are never negative"
            return f"{self.const}u"
        plus = [n if c == 1 else f"{n} * {c}u" for n, c in self.terms if c > 0]
        minus = [n if c == -1 else f"{n} * {-c}u" for n, c in self.terms if c < 0]
        if self.const > 0:
            plus.append(f"{self.const}u")
        elif self.const < 0:
            minus.append(f"{-self.const}u")
        text = " + ".join(plus) if plus else "0u"
        for n in minus:
            text += f" - {n}"
        return f"({text})"

    def is_const(self) -> bool:
        return not self.terms

    def __str__(self) -> str:
        return self.c()


def bare(expr: str) -> str:
    """expr without parentheses that enclose all of it: `((a + b))` -> `a + b`, `(float)(x)` unchanged."""
    expr = str(expr)
    while expr.startswith("(") and expr.endswith(")"):
        depth = 0
        for i, ch in enumerate(expr):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                break
        if i != len(expr) - 1:
            break
        expr = expr[1:-1]
    return expr


_ATOM = re.compile(r"[A-Za-z_]\w*(\[[^\[\]]*\])*|\d+u?|0x[0-9a-fA-F]+u?")


def paren(expr: str) -> str:
    """expr ready to be an operand: names, array elements and numbers as they are, the rest in
    parentheses (once)."""
    expr = str(expr)
    if _ATOM.fullmatch(expr) or bare(expr) != expr:
        return expr
    return f"({expr})"


def code_field(words: str, byte: Sym, shift: Sym, mask: int) -> str:
    """C for the code at (byte, bit shift) of a run of bytes loaded as little-endian uint words."""
    bit = 8 * (byte % 4) + shift
    word = f"{words}[{bare((byte // 4).c())}]"
    shifted = word if bit.is_const() and bit.const == 0 else f"({word} >> {bit.c()})"
    return f"({shifted} & {mask}u)"


def byte_field(array: str, byte: Sym, shift: Sym, mask: int) -> str:
    """C for the code at bit `shift` of byte `byte` of a uchar array."""
    value = f"(uint){array}[{bare(byte.c())}]"
    shifted = value if shift.is_const() and shift.const == 0 else f"({value} >> {shift.c()})"
    return f"({shifted} & {mask}u)"


def f32_literal(v: float) -> str:
    """A float32 constant as an exact C literal: hex, since a decimal literal can round differently
    as float than as double; the mantissa without trailing zeros (`-0x1.647362p-1f`)."""
    if v == 0 and math.copysign(1, v) > 0:
        return "0.0f"
    mant, exp = float(v).hex().split("p")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}p{exp}f"


def f32_decimal(v: float) -> str:
    """The shortest decimal that reads back as the same float32 (for comments next to hex literals)."""
    import numpy as np

    text = str(np.float32(v))
    return text[:-2] if text.endswith(".0") else text


def u32_hex(v: int, digits: int = 8) -> str:
    """A uint literal in hex, zero-padded to `digits` (a table's entries line up)."""
    assert 0 <= v < 1 << 32, v
    return f"0x{v:0{digits}x}u"
