"""Launch plans: one compiled kernel on one device, bound to its op spec.

A plan keeps what does not change between calls (the kernel source, the compiled kernel, the
op's binding and grid rules); `launch()` only binds values by the Args' names and enqueues. The
API, `qkgen check` and the bench all launch through plans.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import numpy as np

from .. import dtypes
from ..errors import QKGenValueError
from ..kernels.ops import get_op
from ..kernels.render import render
from ..kernels.source import KernelSource

# Debug aid used by tests and `qkgen check`: fill outputs with NaN bytes before a kernel runs.
POISON_OUTPUTS = False
# A Bound keeps scratch outputs for at most this many streams (torch's pool holds 32 a priority)
MAX_SCRATCH_KEYS = 64


class Plan:
    def __init__(self, dev, ks: KernelSource, render_kw: dict | None = None):
        self.dev, self.ks = dev, ks
        self.render_kw = render_kw  # render()'s keywords as make() had them ("op", "format" too), if made so
        self.spec = get_op(ks.op)
        self.kernel = dev.compile(ks)
        self.dtype = ks.param("dtype")

    @classmethod
    def make(cls, dev, op: str, fmt: Any, **render_kw) -> Plan:
        """Render `op` for dev's own target and compile it (both cached)."""
        kw = {"op": op, "format": getattr(fmt, "name", fmt), **render_kw}
        return cls(dev, render(op, fmt, dev.target, **render_kw), kw)

    def _accepts(self, arg) -> tuple[str, ...]:
        return dtypes.get(self.dtype if arg.dtype == "x" else arg.dtype).accepts

    def outputs(self, sizes: dict, like: Any = None) -> dict[str, tuple[Any, Any, str]]:
        """New output buffers: bind name -> (launch argument, array, dtype)."""
        out = {}
        for o in self.spec.outputs:
            dt = self.dtype if o.dtype == "dtype" else o.dtype
            if o.zero:
                buf, arr = self.dev.zeros(o.count(sizes), dt, like=like)
            else:
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

    def geometry(self, sizes: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return self.spec.grid(self.ks, sizes)

    def launch(self, values: dict[str, Any], sizes: dict[str, Any]) -> Any:
        g, l = self.geometry(sizes)
        return self.dev.launch(self.kernel, self.bind(values, sizes), g, l)


def _no_given_output(out: Any, poison: bool) -> tuple[Any, Any]:
    raise QKGenValueError("out: given where the call makes its own outputs; allowed: None, or a torch CUDA tensor "
                          "where the call's inputs are torch CUDA tensors (CUDA backend)")


def _caller_result(result: str | tuple, given, inputs: dict, poison: bool) -> tuple[Any, Any] | None:
    """(launch value, array) of the caller's array for a single result (inputs[result]), checked by
    `given` before any copy or launch; None where inputs hold none."""
    out = inputs.get(result) if isinstance(result, str) else None
    return None if out is None else given(out, poison)


def _same(made: tuple[Any, Any], like: Any, poison: bool) -> tuple[Any, Any]:
    """An allocator's call for a zeroed output (flags): the one buffer made with the Bound, never poisoned."""
    return made


class _Ready:
    """A device buffer an earlier launch wrote: bound as it is, without conversion."""

    def __init__(self, buf: Any):
        self.buf = buf


def ready(buf: Any) -> _Ready:
    return _Ready(buf)


class Bound:
    """Plans run one after another for one kind of call (one weight, device, input type, dtype and
    shape), with what does not change between calls worked out once: device-array weights
    converted, scalars, grids, each kernel's backend launcher, output sizes and array types. A
    call converts its input arrays, allocates the outputs and launches each kernel.

    steps: (plan, sizes) in launch order; an output of one step is an input of later ones by
    name. static: the weight's arrays (numpy ones are uploaded at every call, so a later change to
    them is never missed). sample: the first call's input arrays by name. like: the array that
    picks the output type (None: host outputs, downloaded). result, shape: the output returned (a
    tuple of names: those outputs by name, native outputs only). An output the op allocates zeroed
    (flags that kernels only ever set) is allocated once, here, and reused: a caller that finds a
    flag set drops this Bound rather than calling it again.
    A static array may be ready(buf): a device buffer bound as it is (the weight's planes).
    """

    def __init__(self, steps: list, static: dict, sample: dict, like: Any, result: str | tuple, shape: tuple | None):
        assert isinstance(result, str) or like is not None, "several results: native outputs only"
        self.dev = dev = steps[0][0].dev
        self.result, self.shape, self.native = result, shape, like is not None
        self.convert: dict[str, Any] = {}  # per-call inputs by name -> converter
        self.given = _no_given_output  # (out, poison) -> (launch value, out): a caller's result array
        self.uploads: dict[str, tuple] = {}  # host weight arrays -> (array, accepted dtypes)
        self.steps: list[list] = []
        made: set[str] = set()
        for plan, sizes in steps:
            args: list[Any] = []
            dynamic: list[tuple[int, str]] = []
            outs = []
            for i, a in enumerate(plan.ks.args):
                v = None
                if a.kind == "out":
                    o = next(o for o in plan.spec.outputs if o.arg == a.bind)
                    dt = plan.dtype if o.dtype == "dtype" else o.dtype
                    count = o.count(sizes)
                    if o.zero:
                        alloc = functools.partial(_same, dev.zeros(count, dt, like=like))
                    else:
                        alloc = dev.allocator(count, dt, like, shape if a.bind == result else None)
                    if a.bind == result and like is not None:  # a caller may give it (gemv's out)
                        self.given = dev.output_converter(like, count, dt, shape) or _no_given_output
                    outs.append((a.bind, count, dt, alloc, not o.zero))  # the last: made by each call
                    dynamic.append((i, a.bind))
                elif a.kind == "in" and a.bind not in made:
                    if a.bind in sample:
                        self.convert[a.bind] = dev.input_converter(sample[a.bind], a.bind, plan._accepts(a))
                        dynamic.append((i, a.bind))
                    elif isinstance(static[a.bind], _Ready):  # a device buffer a kernel made (weight planes)
                        v = static[a.bind].buf
                    elif dev.is_native(static[a.bind]):
                        v = dev.as_input(static[a.bind], a.bind, plan._accepts(a))
                    else:
                        self.uploads[a.bind] = (static[a.bind], plan._accepts(a))
                        dynamic.append((i, a.bind))
                elif a.kind == "in":
                    dynamic.append((i, a.bind))
                elif a.kind == "scalar":
                    v = np.dtype(dtypes.get(a.dtype).host).type(sizes[a.bind])
                else:
                    v = dev.local_arg(a.dtype, a.count)
                args.append(v)
            made.update(name for name, *_ in outs)
            # [outputs, dynamic positions, their names, args, geometry, launcher (made at the first call)]
            self.steps.append([outs, tuple(i for i, _ in dynamic), [n for _, n in dynamic], args,
                               plan.geometry(sizes), plan.kernel, None])  # fmt: skip
        self.scratch: dict[Any, dict] = {}  # the lean call's reused outputs, by scratch key (_lean)
        self._lean_call = None  # the short way, once a first native call has settled the launchers

    def __call__(self, inputs: dict, like: Any = None) -> Any:
        return self.call(inputs, like)

    def call(self, inputs: dict, like: Any = None) -> Any:
        """Run with `inputs` by name; `like` (the array picking the output type) is used where the
        outputs are native. inputs may hold the (single) result's name: the caller's array for it
        (checked by the device's output_converter), written and returned instead of a new one.
        A method rather than an attribute holding one of ours: a Bound is in no reference cycle, so
        it and the device buffers it holds go when the weight does, not in some later garbage
        collection (inside someone's CUDA graph capture a cuMemFree would invalidate the capture)."""
        lean = self._lean_call
        if lean is not None:
            return lean(inputs, like)
        out = self._generic(inputs, like)
        if self.native and not self.uploads:
            self._lean_call = self._lean(like)  # the launcher is settled: later calls take the short way
        return out

    def _lean(self, like: Any):
        """The call where every output is native and no weight is uploaded (the device-array case):
        launch values made in signature order, without the generic path's bookkeeping. An output
        that a later step reads and the call does not return (the int8dot path's q8_1 copy of x)
        is made once per scratch key of the device (CUDA: torch's stream) and reused by the calls
        of that key, one at a time: an allocation fewer a call (about 5 us of host time on a GPU
        host with torch, docs/bench/2026-11-28-h200-session27.md)."""
        steps = []
        results = {self.result} if isinstance(self.result, str) else set(self.result)
        scratch = set()
        for outs, _, names, _, _, _, run in self.steps:
            allocs = {name: alloc for name, _, _, alloc, _ in outs}
            scratch.update(name for name, _, _, _, fresh in outs if fresh and name not in results)
            steps.append((run, tuple((n, self.convert.get(n), allocs.get(n)) for n in names)))
        result = self.result
        several = not isinstance(result, str)
        key_of = self.dev.scratch_keyer(like) if scratch else None
        held = self.scratch  # scratch key -> {name: (launch value, array)} of the scratch outputs
        lock = threading.Lock()
        given = self.given  # not self: the call below must not hold the Bound (no reference cycle)

        def run_steps(inputs: dict, like: Any, poison: bool, kept: dict | None) -> Any:
            bufs, arrays = {}, {}
            mine = _caller_result(result, given, inputs, poison)
            for run, srcs in steps:
                vals = []
                for name, convert, alloc in srcs:
                    if alloc is not None:
                        if mine is not None and name == result:
                            bufs[name], arrays[name] = mine
                        elif kept is not None and name in scratch:
                            if poison or name not in kept:  # poisoned: a fresh one each call, kept
                                kept[name] = alloc(like, poison)  # the array keeps the buffer alive
                            bufs[name] = kept[name][0]
                        else:
                            bufs[name], arrays[name] = alloc(like, poison)
                    elif name not in bufs:  # an input; an earlier step's output is in bufs already
                        bufs[name] = convert(inputs[name])
                    vals.append(bufs[name])
                run(vals)
            return {r: arrays[r] for r in result} if several else arrays[result]

        def call(inputs: dict, like: Any) -> Any:
            poison = POISON_OUTPUTS  # poisoned outputs are fresh each call, so a missed write shows
            key = None if key_of is None else key_of()
            if key is None:
                return run_steps(inputs, like, poison, None)
            with lock:  # this call's launches follow one another: no other call's between them
                if key not in held and len(held) >= MAX_SCRATCH_KEYS:
                    held.clear()  # torch frees a buffer for its own stream's later work only: safe
                return run_steps(inputs, like, poison, held.setdefault(key, {}))

        return call

    def _generic(self, inputs: dict, like: Any) -> Any:
        poison = POISON_OUTPUTS
        like = like if self.native else None
        mine = _caller_result(self.result, self.given, inputs, poison)
        values = {k: convert(inputs[k]) for k, convert in self.convert.items()}
        for k, (arr, accepts) in self.uploads.items():
            values[k] = self.dev.as_input(arr, k, accepts)
        # the device buffers this call makes (host inputs copied in, outputs): freed by it if it downloads
        own = [values[k] for k in self.uploads] + [values[k] for k in self.convert if isinstance(inputs[k], np.ndarray)]
        arrays = {}
        for step in self.steps:
            outs, dynamic, names, args, (g, l), kernel, run = step
            for name, _, _, alloc, fresh in outs:
                if mine is not None and name == self.result:
                    values[name], arrays[name] = mine
                    continue
                values[name], arrays[name] = alloc(like, poison)
                if fresh:
                    own.append(values[name])
            vals = [values[n] for n in names]
            if run is None:  # the first call's values settle the launcher (stream, packing)
                full = list(args)
                for i, v in zip(dynamic, vals):
                    full[i] = v
                run = step[-1] = self.dev.launcher(kernel, full, dynamic, g, l)
            run(vals)
        if not isinstance(self.result, str):
            return {r: arrays[r] for r in self.result}
        out = arrays[self.result]
        if self.native:
            return out
        _, count, dt, _, _ = next(o for s in self.steps for o in s[0] if o[0] == self.result)
        host = self.dev.download(out, dt, count).reshape(self.shape)
        self.dev.discard(own)  # the download waited for the launches: nothing uses them now
        return host
