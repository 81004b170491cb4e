"""The runtime: launch plans and the public API (quantize, dequantize, gemv) on a device."""
