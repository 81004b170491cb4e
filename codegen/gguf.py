"""qkgen.gguf: GGUF files as QTensors (the loader lives in qkgen.interop.gguf)."""

from .interop.gguf import GGUFTensors, load, supported_types, write  # noqa: F401
