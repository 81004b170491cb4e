"""The device-to-device copy ceiling (GB/s, bytes read + written) of CUDA device 0, as the bench
scripts measure it in their own run: torch copies of 1 GiB, CUDA events around 20 of them."""
import torch


def ceiling() -> float:
    n = 1 << 30
    a = torch.ones(n, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
    for _ in range(3): b.copy_(a)
    e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True)
    e0.record()
    for _ in range(20): b.copy_(a)
    e1.record(); torch.cuda.synchronize()
    return 2 * n * 20 / (e0.elapsed_time(e1) * 1e-3) / 1e9
