"""Launch plans: one compiled kernel on one device, bound to its op spec.

A plan keeps what does not change between calls (the kernel source, the compiled kernel, the
op's binding and grid rules); `launch()` only binds values by the Args' names and enqueues. The
API, `qkgen check` and the bench all launch through plans.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..kernels.ops import get_op
from ..kernels.render import render
from ..kernels.source import KernelSource

# Debug aid used by tests and `qkgen check`: fill outputs with NaN bytes before a kernel runs.
POISON_OUTPUTS = False


class Plan:
    def __init__(self, dev, ks: KernelSource):
        self.dev, self.ks = dev, ks
        self.spec = get_op(ks.op)
        self.kernel = dev.compile(ks)
        self.dtype = ks.param("dtype")

    @classmethod
    def make(cls, dev, op: str, fmt: Any, **render_kw) -> Plan:
        """Render `op` for dev's own target and compile it (both cached)."""
        return cls(dev, render(op, fmt, dev.target, **render_kw))

    def _accepts(self, arg) -> tuple[str, ...]:
        return dtypes.get(self.dtype if arg.dtype == "x" else arg.dtype).accepts

    def outputs(self, sizes: dict, like: Any = None) -> dict[str, tuple[Any, Any, str]]:
        """New output buffers: bind name -> (launch argument, array, dtype)."""
        out = {}
        for o in self.spec.outputs:
            dt = self.dtype if o.dtype == "dtype" else o.dtype
            buf, arr = self.dev.empty(o.count(sizes), dt, like=like, poison=POISON_OUTPUTS)
            out[o.arg] = (buf, arr, dt)
        return out

    def bind(self, values: dict[str, Any], sizes: dict[str, Any]) -> list:
        """Launch arguments in signature order: buffers from `values` (inputs converted and checked,
        outputs as given), scalars from `sizes`, local memory from the Args."""
        args = []
        for a in self.ks.args:
            if a.kind == "in":
                v = values[a.bind]
                args.append(v if isinstance(v, _Ready) else self.dev.as_input(v, a.bind, self._accepts(a)))
            elif a.kind == "out":
                args.append(values[a.bind])
            elif a.kind == "scalar":
                args.append(np.dtype(dtypes.get(a.dtype).host).type(sizes[a.bind]))
            else:
                args.append(self.dev.local_arg(a.dtype, a.count))
        return [a.buf if isinstance(a, _Ready) else a for a in args]

    def binder(self, values: dict[str, Any], sizes: dict[str, Any]):
        """bind() split in two: the values given now are converted once (device arrays only: a
        numpy array is uploaded at every call, so a later change to it is never missed), and the
        returned function takes the rest by name and gives the launch arguments."""
        fixed: dict[int, Any] = {}
        for i, a in enumerate(self.ks.args):
            if a.kind == "in" and a.bind in values and self.dev.is_native(values[a.bind]):
                fixed[i] = self.dev.as_input(values[a.bind], a.bind, self._accepts(a))
            elif a.kind == "scalar":
                fixed[i] = np.dtype(dtypes.get(a.dtype).host).type(sizes[a.bind])
            elif a.kind == "local":
                fixed[i] = self.dev.local_arg(a.dtype, a.count)
        rest = [(i, a) for i, a in enumerate(self.ks.args) if i not in fixed]
        static = {**values}

        def bind(dynamic: dict[str, Any]) -> list:
            args = list(fixed.get(i) for i in range(len(self.ks.args)))
            for i, a in rest:
                v = dynamic[a.bind] if a.bind in dynamic else static[a.bind]
                if a.kind == "in" and not isinstance(v, _Ready):
                    v = self.dev.as_input(v, a.bind, self._accepts(a))
                args[i] = v.buf if isinstance(v, _Ready) else v
            return args

        return bind

    def geometry(self, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.spec.grid(self.ks, sizes)

    def launch(self, values: dict[str, Any], sizes: dict[str, Any]) -> Any:
        g, l = self.geometry(sizes)
        return self.dev.launch(self.kernel, self.bind(values, sizes), g, l)


class _Ready:
    """A device buffer an earlier launch wrote: bound as it is, without conversion."""

    def __init__(self, buf: Any):
        self.buf = buf


def ready(buf: Any) -> _Ready:
    return _Ready(buf)
