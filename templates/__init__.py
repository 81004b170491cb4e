"""Kernel templates (Jinja2), shipped as package data and loaded through importlib.resources."""
