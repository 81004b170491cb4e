"""The shape of the package (issue: one architecture that a new kernel family, format family or target
each join as one file): no import cycles, small files, format-family decisions only in family modules."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"codegen": "qkgen", "backends": "qkgen.backends"}
MAX_LINES = 450
MAX_BENCH_LINES = 400


def _modules() -> dict[str, Path]:
    mods = {}
    for folder, pkg in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            mods[".".join([pkg, *parts])] = path
    return mods


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of import nodes under `if TYPE_CHECKING:` (they never run)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            skip |= {id(n) for n in ast.walk(node)}
    return skip


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Every qkgen module `name` imports, at module level or inside functions (lazy imports too)."""
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")  # fmt: skip
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in mods else base)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m in mods and m != name}


def test_no_import_cycles():
    mods = _modules()
    graph = {m: _imports(m, p, mods) for m, p in mods.items()}
    # A module importing its own package's __init__ (or a parent's) is how Python loads it, not a cycle.
    graph = {m: {t for t in ts if not m.startswith(t + ".")} for m, ts in graph.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, trail: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(trail[trail.index(t):] + [t] if t in trail else [m, t])
            elif t not in state:
                visit(t, trail + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_file_sizes():
    too_long = []
    for folder in PACKAGES:
        for path in (ROOT / folder).rglob("*.py"):
            limit = MAX_BENCH_LINES if "bench" in path.parts else MAX_LINES
            n = len(path.read_text().splitlines())
            if n > limit:
                too_long.append(f"{path.relative_to(ROOT)}: {n} lines (limit {limit})")
    assert not too_long, too_long


def test_family_decisions_live_in_family_modules():
    """Nothing outside codegen/formats/ switches on a row's family; templates never name a backend
    or a format."""
    switch = re.compile(r"\.family\s*(==|!=|\bin\b|\bnot in\b)|family_of\([^)]*\)\.name\s*==")
    found = []
    for folder in ("codegen", "backends"):
        for path in (ROOT / folder).rglob("*.py"):
            if "formats" in path.relative_to(ROOT).parts[:2] or path.name == "test_architecture.py":
                continue
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if switch.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, found
    names = r"\b(nf4|fp4|blockwise8|q[4-8]_[01]|int[1248])\b"
    for path in (ROOT / "templates").glob("*.jinja"):
        text = path.read_text()
        assert not re.search(r"backend\s*==|d\.name\s*==|\{%-?\s*if\s+(cuda|sycl|opencl)", text), path.name
        assert not re.search(r"fmt\.name\s*==|" + names + r"\s*['\"]", text), path.name
