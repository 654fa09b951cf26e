"""The package's shape stays true: no import cycles, layers import only downward, small modules.

Pure ``ast`` over the files under edgetts/ (the package is never imported, so this runs in well
under a second); the size limits also hold for tools/ and tests/support/.  Every ``import``
counts, function-level and ``TYPE_CHECKING`` ones included: a cycle hidden inside a function
still ties two modules together, and a lower layer that imports the daemon "only for a type"
still cannot be lifted out without it (issue 12).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "edgetts"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
"""Sizes that fail the suite: a backstop against a module or function nobody split."""
NOTE_MODULE_LINES = 400
NOTE_FUNCTION_LINES = 60
"""Sizes worth a second look, reported as warnings: a smell detector, not a design rule (squeezing
lines under a hard limit made code worse than either length)."""

LOWER = ("edgetts.voice", "edgetts.text", "edgetts.audio", "edgetts.runtime", "edgetts.engine", "edgetts.errors")
"""The library layers: synthesis, text, audio and CPU placement know nothing of the daemon."""
FORBIDDEN: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (LOWER, ("edgetts.daemon", "edgetts.client", "edgetts.cli", "edgetts.config", "paho", "pyaudio")),
    (("edgetts.config",), ("edgetts.daemon", "edgetts.client", "edgetts.cli")),
    (("edgetts.daemon",), ("edgetts.client", "edgetts.cli")),
)
"""(importers, what they must not import): each a module or package name, prefixes by dots."""


@dataclass(frozen=True)
class Import:
    """One imported name: ``target`` is an edgetts module, or the top-level name of another package."""

    source: str
    target: str
    path: Path
    line: int

    def where(self, root: Path) -> str:
        return f"{self.path.relative_to(root)}:{self.line}"


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int


def load_modules(root: Path, folder: str = PACKAGE) -> dict[str, Module]:
    """Every module under ``root / folder``, by dotted name (a package by its own name)."""
    modules: dict[str, Module] = {}
    for path in sorted((root / folder).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        text = path.read_text(encoding="utf-8")
        modules[".".join(parts)] = Module(".".join(parts), path, ast.parse(text, str(path)), len(text.splitlines()))
    return modules


def _is_package(module: Module) -> bool:
    return module.path.name == "__init__.py"


def _base(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names, relative ones resolved against ``module``."""
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    keep = len(parts) - node.level + (1 if _is_package(module) else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def _resolve(name: str, modules: dict[str, Module]) -> str:
    """An edgetts module stays itself (or its nearest existing parent); others: their top-level name."""
    if name.split(".")[0] != PACKAGE:
        return name.split(".")[0]
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: Module, modules: dict[str, Module]) -> Iterator[Import]:
    """Everything ``module`` imports, anywhere in the file; ``from pkg import name`` names
    ``pkg.name`` when that is a module, else ``pkg``."""
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module.name, _resolve(alias.name, modules), module.path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in modules else base
                yield Import(module.name, _resolve(target, modules), module.path, node.lineno)


def all_imports(modules: dict[str, Module]) -> list[Import]:
    return [imp for module in modules.values() for imp in imports_of(module, modules)]


def _within(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of ``graph``, each sorted; only those that are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_problems(root: Path, modules: dict[str, Module]) -> list[str]:
    """One entry per import cycle, listing the imports (file:line) that close it."""
    edges = [imp for imp in all_imports(modules) if imp.target in modules]
    graph: dict[str, set[str]] = {}
    for imp in edges:
        graph.setdefault(imp.source, set()).add(imp.target)
    problems = []
    for component in _strongly_connected(graph):
        members = set(component)
        inside = sorted(
            {
                (imp.where(root), imp.source, imp.target)
                for imp in edges
                if imp.source in members and imp.target in members
            }
        )
        lines = "".join(f"\n    {where}: {src} imports {dst}" for where, src, dst in inside)
        problems.append(f"import cycle between {', '.join(component)}:{lines}")
    return problems


def layer_problems(root: Path, modules: dict[str, Module]) -> list[str]:
    """Imports that go up a layer, or into paho/pyaudio from below the daemon."""
    problems = set()
    for imp in all_imports(modules):
        for importers, banned in FORBIDDEN:
            if _within(imp.source, importers) and _within(imp.target, banned):
                problems.add((imp.path, imp.line, f"{imp.where(root)}: {imp.source} imports {imp.target}"))
    return [text for _, _, text in sorted(problems)]


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return sorted(found, key=lambda n: n.lineno)


def size_problems(
    root: Path,
    modules: dict[str, Module],
    max_module: int = MAX_MODULE_LINES,
    max_function: int = MAX_FUNCTION_LINES,
) -> list[str]:
    """Modules over ``max_module`` lines, functions (def line to last line) over ``max_function``."""
    problems = []
    for module in sorted(modules.values(), key=lambda m: m.path):
        where = module.path.relative_to(root)
        if module.lines > max_module:
            problems.append(f"{where}:1: module has {module.lines} lines (max {max_module})")
        for node in _functions(module.tree):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > max_function:
                problems.append(f"{where}:{node.lineno}: {node.name}() has {length} lines (max {max_function})")
    return problems


def _note_sizes(root: Path, modules: dict[str, Module]) -> None:
    """Warn (not fail) about what is past the sizes worth a second look."""
    for problem in size_problems(root, modules, NOTE_MODULE_LINES, NOTE_FUNCTION_LINES):
        warnings.warn(f"worth a second look: {problem}", stacklevel=2)


def _fail_on(title: str, problems: list[str]) -> None:
    if problems:
        pytest.fail(f"{title} ({len(problems)}):\n" + "\n".join(f"  {p}" for p in problems), pytrace=False)


@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return load_modules(ROOT)


def test_no_import_cycles(modules: dict[str, Module]) -> None:
    _fail_on("import cycles in edgetts/", cycle_problems(ROOT, modules))


def test_layers_import_only_downward(modules: dict[str, Module]) -> None:
    _fail_on("imports against the layering", layer_problems(ROOT, modules))


def test_modules_and_functions_are_small(modules: dict[str, Module]) -> None:
    _note_sizes(ROOT, modules)
    _fail_on("too long", size_problems(ROOT, modules))


@pytest.mark.parametrize("folder", ["tools", "tests/support"])
def test_tools_and_test_rigs_are_small(folder: str) -> None:
    """The same sizes for the scripts in tools/ and the shared test rigs (issue 12)."""
    found = load_modules(ROOT, folder)
    _note_sizes(ROOT, found)
    _fail_on("too long", size_problems(ROOT, found))


PLANTED = {
    "edgetts/__init__.py": "",
    "edgetts/voice/__init__.py": "",
    "edgetts/voice/a.py": "from edgetts.voice import b\n\n\ndef f():\n    import paho.mqtt.client\n",
    "edgetts/voice/b.py": "def g():\n    from ..daemon.loop import run\n",
    "edgetts/daemon/__init__.py": "",
    "edgetts/daemon/loop.py": "from edgetts.cli import VERBS\nfrom edgetts.voice.a import f\n",
    "edgetts/config/__init__.py": "from edgetts.cli import main\nfrom edgetts.errors import E\n",
    "edgetts/cli/__init__.py": "VERBS = ()\n",
    "edgetts/cli/main.py": "from . import VERBS\n",
    "edgetts/errors.py": "import logging\n",
    "edgetts/text/__init__.py": "",
    "edgetts/text/long.py": (
        "def ok():\n" + "    x = 1\n" * 59 + "\n\ndef long():\n" + "    x = 1\n" * 60 + "\n" * 278
    ),
    "edgetts/text/fits.py": "x = 1\n" * 400,
}
"""A tree with one of each fault, imports inside functions and relative imports among them."""


@pytest.fixture()
def planted(tmp_path: Path) -> Path:
    for name, text in PLANTED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_checker_finds_planted_faults(planted: Path) -> None:
    found = load_modules(planted)
    assert cycle_problems(planted, found) == [
        "import cycle between edgetts.daemon.loop, edgetts.voice.a, edgetts.voice.b:"
        "\n    edgetts/daemon/loop.py:2: edgetts.daemon.loop imports edgetts.voice.a"
        "\n    edgetts/voice/a.py:1: edgetts.voice.a imports edgetts.voice.b"
        "\n    edgetts/voice/b.py:2: edgetts.voice.b imports edgetts.daemon.loop"
    ]
    assert layer_problems(planted, found) == [
        "edgetts/config/__init__.py:1: edgetts.config imports edgetts.cli.main",
        "edgetts/daemon/loop.py:1: edgetts.daemon.loop imports edgetts.cli",
        "edgetts/voice/a.py:5: edgetts.voice.a imports paho",
        "edgetts/voice/b.py:2: edgetts.voice.b imports edgetts.daemon.loop",
    ]
    assert size_problems(planted, found, 400, 60) == [
        "edgetts/text/long.py:1: module has 401 lines (max 400)",
        "edgetts/text/long.py:63: long() has 61 lines (max 60)",
    ]
    assert size_problems(planted, found) == []


_REPO_FIRST = ("sys.path.insert(0, str(Path(__file__).resolve().parents[1]))", "sys.path.insert(0, str(ROOT))")


def test_tools_that_import_edgetts_import_this_checkout_s() -> None:
    """A benchmark run from a venv whose editable install points at another clone measured that
    clone (it happened, 5 December): every tool that imports edgetts puts its own checkout first."""
    missing = []
    for path in sorted((ROOT / "tools").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        imports = any(
            (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE)
            or (isinstance(node, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in node.names))
            for node in ast.walk(tree)
        )
        if imports and not any(line in source for line in _REPO_FIRST):
            missing.append(path.name)
    assert missing == []
