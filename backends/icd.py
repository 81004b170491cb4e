"""Make pip-installed OpenCL runtimes visible to pyopencl and dpctl.

Why this exists: the pip wheel ``intel-opencl-rt`` installs
``<prefix>/etc/OpenCL/vendors/intel-cpu.icd`` whose content is a build-time
placeholder (``/opt/anaconda1anaconda2anaconda3/lib/libintelocl.so``), and no
ICD loader looks in ``<prefix>/etc`` anyway.  pyopencl's bundled loader also
ignores ``OCL_ICD_FILENAMES``.  Both loaders (pyopencl's ocl-icd and the
Khronos loader next to the SYCL runtime) do honour ``OCL_ICD_VENDORS`` = a
folder of ``.icd`` files, read when the loader initialises (on the first
platform query, not at import).  So we keep our own vendors folder in the
qkgen cache and point ``OCL_ICD_VENDORS`` at it.

Call ``register_runtimes()`` before ``pyopencl``/``dpctl`` are imported (at
the latest before their first platform/device query).  Pure stdlib on purpose.
No LD_LIBRARY_PATH is needed, and none must be added: another libOpenCL on it
would make the SYCL runtime lose its OpenCL devices.
"""

from __future__ import annotations

import hashlib
import os
import sys
from importlib import metadata
from pathlib import Path

from ..cache import writable_dir, write_atomic
from ..errors import BackendUnavailable, QKGenError

# Where the loaders look when OCL_ICD_VENDORS is unset.  Setting the variable
# *replaces* this folder, so its entries (NVIDIA, ROCm, a distro pocl, ...)
# are copied into ours to keep them visible.
SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")
INTEL_CPU_LIB = "libintelocl.so"

_notes: list[str] | None = None


def find_intel_cpu() -> Path | None:
    """Path of the Intel CPU OpenCL runtime installed in this environment.

    The absolute path is enough: libintelocl.so has RUNPATH $ORIGIN and its
    dependencies (tbb, svml, imf, ...) sit beside it, so no LD_LIBRARY_PATH.
    """
    try:
        dist = metadata.distribution("intel-opencl-rt")
        for f in dist.files or ():
            if f.name == INTEL_CPU_LIB:
                p = Path(dist.locate_file(f)).resolve()
                if p.is_file():
                    return p
    except Exception:
        pass
    for prefix in dict.fromkeys((sys.prefix, sys.exec_prefix)):
        p = Path(prefix) / "lib" / INTEL_CPU_LIB
        if p.is_file():
            return p
    return None


def _system_icds() -> dict[str, str]:
    entries = {}
    try:
        for f in sorted(SYSTEM_VENDORS.glob("*.icd")):
            lib = f.read_text().strip()
            # Our own Intel CPU entry wins over a system one: two copies of
            # the same runtime would show up as two platforms.
            if lib and not Path(lib).name.startswith("libintelocl"):
                entries[f.name] = lib + "\n"
    except OSError:
        pass
    return entries


def _write_if_changed(path: Path, text: str) -> bool:
    try:
        if path.read_text() == text:
            return False
    except OSError:
        pass
    # Atomic replace: several processes may register at the same time.
    write_atomic(path, text.encode())
    return True


def register_runtimes() -> list[str]:
    """Point the OpenCL ICD loaders at a qkgen vendors folder.

    Idempotent and never raises; returns notes on what was done or why not.
    pocl needs no entry: the pocl-binary-distribution wheel puts libpocl and
    pocl.icd into pyopencl/.libs, which pyopencl's loader always scans
    (via PYOPENCL_HOME) in addition to OCL_ICD_VENDORS; a second entry here
    would list the pocl platform twice.
    """
    global _notes
    if _notes is not None:
        return _notes
    notes: list[str] = []
    try:
        _register(notes)
    except QKGenError:
        raise  # no folder at all: an error naming QKGEN_CACHE_DIR, not another device
    except Exception as e:  # never break an import over this
        notes.append(f"OpenCL runtime registration failed: {e!r}")
    _notes = notes
    return notes


def notes() -> list[str]:
    """What registration did or why it did not (for `qkgen devices`); registers first."""
    try:
        return list(register_runtimes())
    except QKGenError as e:
        return [str(e)]


def _register(notes: list[str]) -> None:
    late = [m for m in ("pyopencl", "dpctl") if m in sys.modules]
    if late:
        notes.append(f"{', '.join(late)} already imported: too late if a "
                     "platform/device query has already run")
    if os.environ.get("OCL_ICD_VENDORS"):
        # The user chose the loader's folder; respect it as it is.
        notes.append("OCL_ICD_VENDORS set by user "
                     f"({os.environ['OCL_ICD_VENDORS']}); left alone")
        return
    lib = find_intel_cpu()
    if lib is None:
        notes.append("Intel CPU OpenCL runtime (intel-opencl-rt) not found; "
                     "OpenCL loader defaults left alone")
        return

    wanted = _system_icds()
    wanted["qkgen-intel-cpu.icd"] = f"{lib}\n"
    # One folder per environment: two venvs sharing the cache must not
    # overwrite each other's entry (each must load its own libintelocl,
    # the one matching its SYCL runtime).
    env_key = hashlib.sha1(str(lib).encode()).hexdigest()[:12]
    try:
        # An unusable cache folder must not silently hide the Intel runtime (OpenCL device 0
        # would become pocl, SYCL would see nothing): fall back to a private folder, say so.
        folder, why = writable_dir("opencl-vendors", env_key)
        if why:
            notes.append(why)
        for stale in folder.glob("*.icd"):
            if stale.name not in wanted:
                stale.unlink(missing_ok=True)
                notes.append(f"removed stale {stale.name}")
        for name, text in wanted.items():
            if _write_if_changed(folder / name, text):
                notes.append(f"wrote {name} -> {text.strip()}")
    except OSError as e:
        raise BackendUnavailable(
            f"OpenCL runtime registration: cannot write an OpenCL vendors folder under QKGEN_CACHE_DIR "
            f"or a temp folder ({e}); allowed: a writable QKGEN_CACHE_DIR"
        ) from None
    os.environ["OCL_ICD_VENDORS"] = str(folder)
    notes.append(f"OCL_ICD_VENDORS={folder} (Intel CPU: {lib}; "
                 f"{len(wanted) - 1} entries from {SYSTEM_VENDORS})")
