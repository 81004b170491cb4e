"""Finding the peer libraries a CUDA bench compares with: torch (dense rows, events) and bitsandbytes."""

from __future__ import annotations

from typing import Any


def find_torch(dev, no_bnb: bool, notes: list[str]) -> tuple[Any, Any, Any]:
    """(torch, its device, bitsandbytes.functional) for the CUDA device dev; None where unusable,
    with the reason appended to notes."""
    try:
        import torch
    except ImportError:
        notes.append("torch is not installed: no bitsandbytes or dense torch rows")
        return None, None, None
    if not torch.cuda.is_available():
        notes.append("torch has no CUDA device: no bitsandbytes or dense torch rows")
        return None, None, None
    idx = dev.info.index
    if idx >= torch.cuda.device_count():
        notes.append(f"torch sees {torch.cuda.device_count()} CUDA device(s), not index {idx}")
        return None, None, None
    tname = torch.cuda.get_device_name(idx)
    if tname.strip() != dev.info.name.strip():
        notes.append(f"torch's cuda:{idx} is {tname!r}, qkgen's device is {dev.info.name!r}")
    torch.cuda.set_device(idx)
    bnbf = None
    if not no_bnb:
        try:
            import bitsandbytes.functional as bnbf
        except Exception as e:  # bnb prints and raises all sorts on a broken install
            notes.append(f"bitsandbytes unusable: {type(e).__name__}: {e}")
    return torch, torch.device("cuda", idx), bnbf
