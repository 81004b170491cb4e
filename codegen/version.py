"""qkgen's version: stamped into every generated file's header and every cache key."""

__version__ = "0.1.0"
