"""The PNG chart (--plot): % of the copy ceiling per format and M, one panel per dtype and shape,
one bar series per implementation and M. matplotlib is optional: without it --plot fails before
the run, saying how to install it."""

from __future__ import annotations

import math
from pathlib import Path

from qkgen.errors import QKGenError


def matplotlib_pyplot():
    """matplotlib.pyplot on the Agg backend, or a QKGenError saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise QKGenError(f"--plot needs matplotlib ({e}); pip install 'qkgen[bench]' or matplotlib") from None
    return plt


def plot(report: dict, path: Path) -> None:
    plt = matplotlib_pyplot()
    rows = [r for r in report["rows"] if r["status"] == "ok" and r.get("pct_copy") is not None]
    panels = list(dict.fromkeys((r["dtype"], r["shape"]) for r in rows)) or [("-", "-")]
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.5 * ncols, 4.2 * nrows), squeeze=False)
    for ax, (dtype, shape) in zip(axes.flat, panels):
        here = [r for r in rows if (r["dtype"], r["shape"]) == (dtype, shape)]
        labels = list(dict.fromkeys(f"{r['format']} {r['variant']}".replace(" -", "") for r in here))
        series = list(dict.fromkeys((r["impl"], r.get("m")) for r in here))
        val = {(f"{r['format']} {r['variant']}".replace(" -", ""), r["impl"], r.get("m")): r["pct_copy"]
               for r in here}  # fmt: skip
        width = 0.8 / max(1, len(series))
        for j, (impl, m) in enumerate(series):
            xs = [i + (j - (len(series) - 1) / 2) * width for i in range(len(labels))]
            ax.bar(xs, [val.get((lab, impl, m), 0.0) for lab in labels], width,
                   label=impl + ("" if m is None else f" M={m}"))  # fmt: skip
        ax.axhline(100, color="black", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("% of copy ceiling")
        ax.set_title(f"{dtype} {shape}", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    c = report["copy_ceiling"].get("gbps")
    ceiling = f"{c:.0f} GB/s" if c else "no ceiling"
    fig.suptitle(f"qkgen bench: {report['backend']} on {report['device']['name']}; % of copy ({ceiling}), "
                 "cold (hot where only hot)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
