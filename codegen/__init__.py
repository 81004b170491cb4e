"""qkgen: quantization kernels for CUDA, SYCL and OpenCL from one format table.

    import qkgen
    qt = qkgen.quantize(weights, "nf4", blocksize=64, nested=True)   # reference codec
    y = qkgen.dequantize(qt, dtype="bf16")                          # on the selected device
    print(qkgen.render("dequantize", "nf4", "cuda", dtype="bf16").source)
"""

from . import formats  # callable: qkgen.formats() lists the rows
from .api import dequantize, gemv, quantize
from .errors import BackendUnavailable, BuildError, FormatError, QKGenError, QKGenValueError
from .qtensor import QTensor
from .render import KernelSource, render
from .version import __version__

__all__ = [
    "__version__", "formats", "quantize", "dequantize", "gemv", "render", "QTensor", "KernelSource",
    "QKGenError", "QKGenValueError", "FormatError", "BackendUnavailable", "BuildError",
]  # fmt: skip
