"""What rendering produces: a KernelSource, and its one argument list.

An op spec builds ONE list of Args; the dialect renders it as the C signature, and the runtime
binds launch values to it by name. Backends read it to type scalars and size local memory.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .. import dtypes
from .target import Target

ARG_KINDS = ("in", "out", "scalar", "local")


@dataclass(frozen=True)
class Arg:
    """One kernel argument.

    kind "in" / "out": a global buffer the kernel reads / writes, of elements `dtype` (a dtypes.py
    name; the launch checks or allocates that), declared in C as `ctype` pointers (bytes for
    buffers a kernel reads through vector loads). kind "scalar": a value of `dtype` ("u32",
    "f32"). kind "local": work-group local memory of `count` elements of `dtype`; it is a kernel
    argument only on dialects that pass local memory as arguments (SYCL's work_group_memory).
    `dtype` "x" on an input means "the activation dtype of this kernel" (its `dtype` parameter).
    `bind` is the name the launch looks the value up by (default: the C name), e.g. a QTensor's
    `data` array binds to the C parameter `codes` or `blocks`. `align`: a local array declared
    with that alignment in bytes (0: its type's), for vector access (Dialect.local_view).
    """

    name: str
    kind: str
    dtype: str
    ctype: str = ""
    count: int = 0
    bind: str = ""
    align: int = 0

    def __post_init__(self) -> None:
        assert self.kind in ARG_KINDS, self.kind
        assert self.name.isidentifier(), self.name
        if not self.bind:
            object.__setattr__(self, "bind", self.name)
        if not self.ctype:
            object.__setattr__(self, "ctype", "uchar" if self.dtype == "x" else dtypes.get(self.dtype).ctype)

    @property
    def is_buffer(self) -> bool:
        return self.kind in ("in", "out")

    def nbytes(self) -> int:
        """Bytes of a local-memory argument."""
        return self.count * dtypes.get(self.dtype).size


@dataclass(frozen=True)
class KernelSource:
    op: str
    format: str
    target: Target
    name: str  # the kernel's entry point; encodes every specialization
    source: str
    template: str
    params: tuple[tuple[str, object], ...]  # every parameter that shaped the source (header too)
    args: tuple[Arg, ...]  # in signature order
    wg: int  # work-group size the kernel requires (its first dimension)
    dims: int = 1  # launch dimensions (1, 2 or 3)
    # the kernel waits in-kernel for the grid before it in its stream (target.grid_dependency): the
    # backend launches it programmatically, so it may start before that grid ends
    grid_wait: bool = False

    @property
    def backend(self) -> str:
        return self.target.backend

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()

    @property
    def filename(self) -> str:
        from .dialects import dialect_class

        return self.name + dialect_class(self.backend).suffix

    def param(self, key: str, default=None):
        return dict(self.params).get(key, default)
