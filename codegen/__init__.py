"""qkgen: quantization kernels for CUDA, SYCL and OpenCL from one format table.

    import qkgen
    qt = qkgen.quantize(weights, "nf4", blocksize=64, nested=True)   # reference codec
    y = qkgen.dequantize(qt, dtype="bf16")                          # on the selected device
    print(qkgen.render("dequantize", "nf4", "cuda-sm90", dtype="bf16").source)

Layout: formats/ (rows, families, reference codecs, QTensor) -> kernels/ (targets, dialects, op
registry, render) -> runtime/ (plans, API) -> tools/ (CLI, check, bench); backends/ compile and
launch. docs/architecture.md draws the data flow.
"""

from . import formats  # callable: qkgen.formats() lists the rows
from .errors import BackendUnavailable, BuildError, FormatError, QKGenError, QKGenValueError
from .formats import QTensor
from .kernels.render import render
from .kernels.source import KernelSource
from .kernels.target import PROFILES, Target
from .runtime.api import dequantize, gemv
from .runtime.quantize import quantize
from .version import __version__

__all__ = [
    "__version__", "formats", "quantize", "dequantize", "gemv", "render", "QTensor", "KernelSource", "Target",
    "PROFILES", "QKGenError", "QKGenValueError", "FormatError", "BackendUnavailable", "BuildError",
]  # fmt: skip
