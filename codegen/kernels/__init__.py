"""Kernels: typed targets, dialects, the op registry and render() -> KernelSource. Pure: no device."""
