"""`qkgen dump OP FORMAT --backend B --device D` prints, byte for byte, the source that device compiles."""

import contextlib
import hashlib
import io

import numpy as np
import pytest

import qkgen
from qkgen.backends import get, open_device
from qkgen.tools.cli import main

CASES = [  # (backend, device, op, format, dump flags, how the runtime reaches that kernel)
    ("opencl", "Intel", "gemv", "q4_0", ["--dtype", "f32", "--mmax", "1"], "gemv1"),
    ("opencl", "Intel", "gemv", "nf4", ["--dtype", "f16", "--mmax", "8", "--nested"], "gemv3"),
    ("opencl", "Intel", "dequantize", "int4", ["--dtype", "bf16", "--scale-mode", "group"], "dequantize"),
    ("sycl", "0", "gemv", "q5_1", ["--dtype", "f32", "--mmax", "1"], "gemv1"),
    ("sycl", "0", "dequantize", "nf4", ["--dtype", "f16"], "dequantize"),
]


def _dump(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["dump", *argv]) == 0
    return out.getvalue()


@pytest.mark.parametrize("backend, device, op, fmt, flags, run", CASES, ids=lambda c: str(c))
def test_dump_for_a_device_is_what_it_compiles(backend, device, op, fmt, flags, run, rng):
    if not get(backend).is_available():
        pytest.skip(f"{backend}: {get(backend).why_unavailable()}")
    dev = open_device(backend, device)
    nested = "--nested" in flags
    dtype = flags[flags.index("--dtype") + 1]
    kw = {"scale_mode": "group"} if "--scale-mode" in flags else {"nested": nested}
    qt = qkgen.quantize(rng.standard_normal((8, 256)).astype(np.float32), fmt, **kw)
    if run == "dequantize":
        qkgen.dequantize(qt, dtype, backend=backend, device=device)
    else:
        x = rng.standard_normal((1 if run == "gemv1" else 3, 256)).astype(np.float32)
        x = x if dtype == "f32" else qkgen.formats.reference.round_to(x, dtype)
        qkgen.gemv(qt, x, backend=backend, device=device)
    compiled = {sha for sha, _ in dev._kernels}
    text = _dump(op, fmt, "--backend", backend, "--device", device, *flags)
    assert hashlib.sha256(text.encode()).hexdigest() in compiled
    assert f"target:   {dev.target.describe()}" in text
