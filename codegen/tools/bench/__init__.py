"""`qkgen bench`: time generated kernels with device events beside bitsandbytes, dense torch and
the device's copy ceiling. One module per job:

  options          argument parsing and validation, the shape / format / dtype selection
  cases            the case registry (BenchOp, Case, Impl, TimedSet) and the context cases get
  dequantize_case  --op dequantize        gemv_case  --op gemv
  byte_counts      the bytes a launch must move, with its formula
  baselines        bitsandbytes and dense torch rows
  qkgen_impl       the only caller of qkgen's runtime, renderer and reference codec
  harness          rotation past 4x L2, warm-up, median, rows; copy ceiling and L2 from the device
  compile_times    cold / warm compiles in fresh processes (also the child's entry point)
  report           markdown, PNG plot, command line and versions
  main             main(args)
"""

from . import dequantize_case, gemv_case  # noqa: F401  (importing a case module registers it)
from .main import main
from .options import add_arguments

__all__ = ["add_arguments", "main"]
