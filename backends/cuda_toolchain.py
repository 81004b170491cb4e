"""The CUDA toolchain: finding nvcc, its version, and compiling CUDA C++ to cubins and fatbins.

A pure function of (source, architectures, flags): no GPU, driver or pycuda is needed here, so the
compile matrix (tests/test_cuda_compile.py) runs on machines without a GPU.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailable, BuildError, QKGenValueError

# fmad stays at nvcc's default (on): the templates round with __fmul_rn/__fadd_rn where it matters.
NVCC_FLAGS = ("-O3", "-std=c++17")


def find_nvcc() -> str | None:
    """Path of nvcc, or None. Never raises."""
    exe = "nvcc.exe" if os.name == "nt" else "nvcc"
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if root and os.path.isfile(os.path.join(root, "bin", exe)):
            return os.path.join(root, "bin", exe)
    found = shutil.which(exe)
    if found:
        return found
    default = os.path.join("/usr/local/cuda/bin", exe)
    return default if os.path.isfile(default) else None


@functools.cache
def nvcc_version(nvcc: str | None = None) -> str:
    """nvcc's release and build lines (part of every cache key), or "nvcc not found"."""
    nvcc = nvcc or find_nvcc()
    if not nvcc:
        return "nvcc not found"
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvcc unusable: {e}"
    return " ".join(line for line in out.stdout.splitlines() if "release" in line or line.startswith("Build"))


@functools.cache
def nvcc_arches(nvcc: str | None = None) -> tuple[str, ...]:
    """The real architectures this nvcc builds for ("sm_80", ...), from `nvcc --list-gpu-arch`."""
    nvcc = nvcc or find_nvcc()
    if not nvcc:
        return ()
    try:
        out = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60,
                             check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(dict.fromkeys(a.replace("compute_", "sm_") for a in out.stdout.split() if a.startswith(
        ("sm_", "compute_"))))  # fmt: skip


def sm_number(arch: Any) -> str:
    """"90" from "sm_90", "compute_90" or 90 (with an a/f suffix kept: "90a")."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3}[af]?)", str(arch))
    if not m:
        raise QKGenValueError(f"arch: {arch!r} is not a CUDA architecture; allowed: e.g. sm_80, sm_90, 90")
    return m.group(1)


@dataclass(frozen=True)
class NvccOutput:
    binary: bytes  # a cubin for one architecture, a fatbin for several
    log: str  # what nvcc printed (warnings); messages about the source name `<name>.cu`


def nvcc_build(source: str, arches: Any, options: Any = NVCC_FLAGS, name: str = "kernel",
               ptx_arch: Any = None) -> NvccOutput:
    """Compile CUDA C++ with the nvcc executable: one arch gives a cubin, several one fatbin
    (a single nvcc call). Raises BuildError with nvcc's output when it fails.

    By default every architecture gets its own front end (compute_XX for sm_XX). With `ptx_arch`
    the source goes through the front end once, for that virtual architecture, and ptxas turns
    that one PTX into machine code for every arch: about a quarter of the time for six arches,
    for sources whose code does not depend on the architecture beyond that PTX's."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise BackendUnavailable("cuda: nvcc not found; put it on PATH or set CUDA_HOME")
    sms = [sm_number(a) for a in ([arches] if isinstance(arches, (str, int)) else arches)]
    if ptx_arch is not None:
        codes = ",".join(f"sm_{a}" for a in sms)
        target, suffix = ["-fatbin", f"-gencode=arch=compute_{sm_number(ptx_arch)},code=[{codes}]"], ".fatbin"
    elif len(sms) == 1:
        target, suffix = ["-cubin", f"-arch=sm_{sms[0]}"], ".cubin"
    else:
        target, suffix = ["-fatbin", *(f"-gencode=arch=compute_{a},code=sm_{a}" for a in sms)], ".fatbin"
    with tempfile.TemporaryDirectory(prefix="qkgen-nvcc-") as tmp:
        # Relative names in a private folder: messages read "<name>.cu(12): warning ...".
        Path(tmp, name + ".cu").write_text(source, encoding="utf-8")
        cmd = [nvcc, *target, *options, "-o", name + suffix, name + ".cu"]
        try:
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        except OSError as e:
            raise BackendUnavailable(f"cuda: cannot run {nvcc}: {e}") from None
        log = (r.stdout + r.stderr).strip()
        if r.returncode != 0:
            raise BuildError("cuda", name, f"$ {' '.join(cmd[1:])}\n{log}", source)
        return NvccOutput(Path(tmp, name + suffix).read_bytes(), log)


def nvcc_compile(source: str, arch: str, options: Any = NVCC_FLAGS, name: str = "kernel") -> bytes:
    """The cubin of `source` for one architecture (e.g. "sm_90")."""
    return nvcc_build(source, [arch], options, name).binary
