"""An unusable QKGEN_CACHE_DIR never silently changes the device (issue 10 item 5): the OpenCL
vendors folder falls back to a private temp folder with a warning naming QKGEN_CACHE_DIR, the
Intel CPU runtime stays OpenCL device 0 and SYCL's opencl:cpu, and icd.notes() says what happened."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from qkgen.backends import icd

_CHILD = """
import json, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from qkgen.backends import get, icd
    opencl = [d.platform for d in get("opencl").devices()] if get("opencl").is_available() else []
    sycl = get("sycl").why_unavailable()
print(json.dumps({"opencl": opencl, "sycl": sycl, "notes": icd.notes(),
                  "warnings": [str(w.message) for w in caught]}))
"""


def _child(cache_value: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    env["QKGEN_CACHE_DIR"] = cache_value
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def normal(tmp_path_factory):
    if icd.find_intel_cpu() is None:
        pytest.skip("the Intel CPU OpenCL runtime (intel-opencl-rt) is not installed")
    return _child(str(tmp_path_factory.mktemp("cache")))


def test_cache_dir_that_is_a_file_keeps_the_devices(normal, tmp_path):
    not_a_folder = tmp_path / "a-file"
    not_a_folder.write_text("not a folder")
    got = _child(str(not_a_folder))
    assert got["opencl"] == normal["opencl"] and got["opencl"] and "Intel" in got["opencl"][0]
    assert got["sycl"] == normal["sycl"]
    assert any("QKGEN_CACHE_DIR" in w and "cannot be written" in w for w in got["warnings"]), got["warnings"]
    assert any("QKGEN_CACHE_DIR" in n for n in got["notes"]), got["notes"]


def test_notes_say_what_registration_did(normal):
    assert any(n.startswith("OCL_ICD_VENDORS=") for n in normal["notes"]), normal["notes"]
