"""`qkgen bench`: time generated kernels beside bitsandbytes, dense torch, llama.cpp and the
device's copy ceiling, every implementation the same way. One module per job:

  options          argument parsing and validation, the shape / format / dtype selection
  cases            the case registry (BenchOp, Case, Impl, TimedSet) and the context cases get
  dequantize_case  --op dequantize        gemv_case  --op gemv
  byte_counts      the bytes a launch must move, with its formula
  baselines        bitsandbytes and dense torch rows
  qkgen_impl       the only caller of qkgen's runtime, renderer and reference codec
  timing           CUDA-graph replay, event spans, per-launch events (fallback), host µs per call
  harness          rotation past 4x L2, hot and cold, median, rows; copy ceiling and L2 from the device
  llamacpp         llama.cpp rows: test-backend-ops perf runs and their output parser
  compile_times    cold / warm compiles in fresh processes (also the child's entry point)
  report           markdown header and sections, command line and versions
  tables           the markdown table        plot  the PNG chart (% of copy per format and M)
  main             main(args)
"""

from . import dequantize_case, gemv_case  # noqa: F401  (importing a case module registers it)
from .main import main
from .options import add_arguments

__all__ = ["add_arguments", "main"]
