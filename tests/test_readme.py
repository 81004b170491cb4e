"""Every command and snippet in README.md runs as written (issue: the README's promises hold).

python blocks run in one namespace, top to bottom. sh blocks: `qkgen ...` lines run as
`python -m qkgen ...` (a line naming a backend this machine lacks is skipped, visibly);
`make X` lines must be targets of the Makefile (`make -n X`); `pip install 'qkgen[a,b]'` lines
must name extras pyproject.toml declares. Any other line fails the test: add a rule here first.
"""

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from qkgen.backends import get

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, flags=re.S)


def _sh_lines() -> list[str]:
    lines = []
    for lang, body in BLOCKS:
        if lang == "sh":
            lines += [ln.split(" #", 1)[0].strip() for ln in body.splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def test_python_snippets_run(tmp_path, monkeypatch):
    if not get("opencl").is_available() and not get("sycl").is_available():
        pytest.skip("no OpenCL or SYCL device: the API snippets need a device")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    blocks = [body for lang, body in BLOCKS if lang == "python"]
    assert blocks, "README has no python snippet"
    for body in blocks:
        if "..." in body or body.startswith("# sketch"):  # an illustration: it must at least parse
            compile(body.replace("...", "None"), "README.md", "exec")
            continue
        exec(compile(body, "README.md", "exec"), namespace)  # noqa: S102


@pytest.mark.parametrize("line", _sh_lines())
def test_shell_lines(line, tmp_path):
    words = shlex.split(line)
    if words[0] == "make":
        r = subprocess.run(["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    elif words[:2] == ["pip", "install"]:
        extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
        m = re.fullmatch(r"qkgen(?:\[([\w,-]+)\])?", words[2])
        assert m and set(filter(None, (m.group(1) or "").split(","))) <= extras, line
    elif words[0] == "qkgen":
        for flag in ("--backend", "-b"):
            if flag in words and not get(words[words.index(flag) + 1]).is_available():
                pytest.skip(f"{words[words.index(flag) + 1]} is not available here")
        if words[1:2] == ["bench"]:
            pytest.skip("qkgen bench runs on the GPU machine (tests/test_bench.py covers it on CPU)")
        words = [w.replace("generated/", str(tmp_path) + "/").replace("out/", str(tmp_path) + "/") for w in words]
        env = dict(os.environ)
        if words[1:2] == ["cache"]:  # never empty the suite's own cache (compiled kernels, the test model)
            env["QKGEN_CACHE_DIR"] = str(tmp_path / "cache")
        r = subprocess.run([sys.executable, "-m", "qkgen", *words[1:]], cwd=tmp_path, capture_output=True,
                           text=True, timeout=900, env=env)  # fmt: skip
        assert r.returncode == 0, f"{line}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    else:
        pytest.fail(f"README line with no rule in tests/test_readme.py: {line}")
