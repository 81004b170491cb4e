"""Cache integrity (issue 10 item 3): every kind of damage to a cache entry is detected before the
runtime sees it, the entry is deleted and rebuilt, and the result is right; writes are atomic and
leave nothing behind; nothing read from the cache leads outside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qkgen import cache
from qkgen.backends import get

from .test_backend_launch import _OPENCL, _SYCL, kernel_source, run_case

SHAPE = ((16, 6), (4, 2))


def _damage(path: Path, how: str, other: Path | None = None) -> None:
    blob = path.read_bytes()
    if how == "random":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, len(blob), dtype=np.uint8).tobytes())
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(blob[: len(blob) // 2])
    elif how == "flipped":
        i = len(blob) * 2 // 3
        path.write_bytes(blob[:i] + bytes([blob[i] ^ 0x10]) + blob[i + 1 :])
    elif how == "other":
        path.write_bytes(other.read_bytes())
    elif how == "headerless":  # what qkgen wrote before entries carried digests
        path.write_bytes(blob[blob.index(b"\n") + 1 :])
    else:
        raise AssertionError(how)


DAMAGE = ["random", "empty", "truncated", "flipped", "other", "headerless"]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("QKGEN_CACHE_DIR", str(tmp_path))
    return tmp_path


# ---- the cache module ----


def test_entries_round_trip_and_refuse_other_keys(cache_dir):
    p = cache_dir / "x" / "a.bin"
    assert cache.store_entry(p, b"payload", "key-a")
    assert cache.load_entry(p, "key-a") == b"payload"
    assert cache.load_entry(p, "key-b") is None and not p.exists()  # another key's entry: deleted


def test_a_failed_write_leaves_nothing_behind(cache_dir, monkeypatch):
    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    assert not cache.store_entry(cache_dir / "k.bin", b"x" * 100, "k")
    assert not list(cache_dir.rglob("*.tmp")) and not (cache_dir / "k.bin").exists()


def test_paths_outside_the_cache_are_never_read(cache_dir, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "secret.bin"
    cache.store_entry(outside, b"secret", "k")  # a valid entry, but not in the cache folder
    assert cache.load_entry(outside, "k") is None
    link = cache_dir / "link.bin"
    link.symlink_to(outside)
    assert cache.load_entry(link, "k") is None


def test_cache_info_and_clear(cache_dir):
    cache.store_entry(cache_dir / "opencl" / "a.bin", b"1234", "a")
    cache.store_entry(cache_dir / "sycl" / "b.ref", b"5678", "b")
    info = cache.cache_info()
    assert info["path"] == str(cache_dir) and info["files"] == 2 and info["bytes"] > 8
    assert cache.clear_cache() == 2
    assert cache.cache_info()["files"] == 0


def test_sidecar_digests(cache_dir):
    f = cache_dir / "lib.so"
    f.write_bytes(b"\x7fELF" + b"\0" * 100)
    cache.store_file(f, "k")
    assert cache.verify_file(f, "k")
    f.write_bytes(f.read_bytes()[:50])
    assert not cache.verify_file(f, "k") and not f.exists()


# ---- OpenCL binaries ----

opencl = get("opencl")


@pytest.mark.skipif(not opencl.is_available(), reason=f"OpenCL: {opencl.why_unavailable()}")
@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_opencl_binary_is_rebuilt(how, cache_dir):
    first = opencl.open(0)  # a fresh Device: an empty memory cache in front of the disk
    ks = kernel_source(first, "qk_test_nd", _OPENCL, 2, True)
    other = kernel_source(first, "qk_test_nd", _OPENCL + "/* another kernel */\n", 2, True)
    first.compile(ks)
    first.compile(other)
    path = first.cache_path(first.disk_key(ks, first.build_options(ks)), ".bin")
    other_path = first.cache_path(first.disk_key(other, first.build_options(other)), ".bin")
    _damage(path, how, other_path)

    dev = opencl.open(0)
    run_case(dev, dev.compile(ks), *SHAPE, local_arg=lambda wg: dev.local_arg("u32", wg))
    key = dev.disk_key(ks, dev.build_options(ks))
    assert dev.cache_load(key, ".bin") is not None  # rebuilt and stored again, whole
    assert not list(cache_dir.rglob("*.tmp"))


# ---- SYCL bundles, references and the helper ----

sycl = get("sycl")
needs_sycl = pytest.mark.skipif(not sycl.is_available(), reason=f"SYCL: {sycl.why_unavailable()}")
_SYCL2 = _SYCL.replace("DIMS", "2")


@needs_sycl
@pytest.mark.parametrize("how", DAMAGE)
def test_damaged_sycl_bundle_is_rebuilt(how, cache_dir):
    first = sycl.open(0)
    ks = kernel_source(first, "qk_test_nd_2", _SYCL2, 2, True)
    other = kernel_source(first, "qk_test_nd_2", _SYCL2 + "// another kernel\n", 2, True)
    first.compile(ks)
    first.compile(other)
    path = first.cache_path(first.disk_key(ks, first.build_options(ks)), ".syclbin")
    other_path = first.cache_path(first.disk_key(other, first.build_options(other)), ".syclbin")
    _damage(path, how, other_path)

    dev = sycl.open(0)
    kernel = dev.compile(ks)
    assert not kernel.program.from_cache  # the damaged bundle was not used
    run_case(dev, kernel, *SHAPE, local_arg=lambda wg: dev.local_arg("u32", wg))
    assert cache.load_entry(path, path.name) is not None


@needs_sycl
@pytest.mark.parametrize("ref", [b"\xff\xfe not utf-8", b"../../../../etc/passwd", b"", b"0" * 31])
def test_bad_sycl_reference_is_ignored(ref, cache_dir):
    dev = sycl.open(0)
    ks = kernel_source(dev, "qk_test_nd_2", _SYCL2, 2, True)
    key = dev.disk_key(ks, dev.build_options(ks))
    dev.cache_store(key, ".ref", ref)  # a valid digest around a payload that names no bundle
    kernel = dev.compile(ks)
    run_case(dev, kernel, *SHAPE, local_arg=lambda wg: dev.local_arg("u32", wg))
    assert not dev.cache_path(key, ".ref").exists()


_HELPER_CHILD = """
import json, numpy as np
from qkgen.backends import sycl_native, get
from tests.test_backend_launch import _SYCL, kernel_source, run_case
dev = get("sycl").open(0)
kernel = dev.compile(kernel_source(dev, "qk_test_nd_2", _SYCL.replace("DIMS", "2"), 2, True))
run_case(dev, kernel, (16, 6), (4, 2), local_arg=lambda wg: dev.local_arg("u32", wg))
print(json.dumps([str(p) for p in sycl_native._build_helper()[:1]]))
"""


@needs_sycl
@pytest.mark.parametrize("how", ["truncated", "empty"])
def test_damaged_sycl_helper_is_rebuilt(how, cache_dir):
    env = {**os.environ, "QKGEN_CACHE_DIR": str(cache_dir)}
    root = Path(__file__).resolve().parent.parent

    def child():
        r = subprocess.run([sys.executable, "-c", _HELPER_CHILD], env=env, cwd=root, capture_output=True,
                           text=True, timeout=600)  # fmt: skip
        assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
        return Path(json.loads(r.stdout.strip().splitlines()[-1])[0])

    helper = child()
    _damage(helper, how)
    assert child() == helper and helper.stat().st_size > 1000
