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
from collections.abc import Iterable
from pathlib import Path

import pytest

from support.imports import PACKAGE, Module, all_imports, load_modules

ROOT = Path(__file__).resolve().parents[1]
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


MAX_DAEMON_TOP = 10
"""Modules directly in edgetts/daemon/ (its __init__ counted): the loop and its glue; every stage of
an announcement lives in its own folder (inbound, admission, playout, pacing), so the folder list
reads as the flow."""


def test_the_daemon_folder_reads_as_the_flow() -> None:
    top = sorted(p.name for p in (ROOT / PACKAGE / "daemon").glob("*.py"))
    assert len(top) <= MAX_DAEMON_TOP, top
    stages = {p.name for p in (ROOT / PACKAGE / "daemon").iterdir() if (p / "__init__.py").exists()}
    assert {"inbound", "admission", "playout", "pacing"} <= stages, stages


def test_one_wav_writer(modules: dict[str, Module]) -> None:
    """Only edgetts.audio.wav builds a WAV header (a RIFF tag as bytes, or the wave module writing)."""
    writers = []
    for module in modules.values():
        for node in ast.walk(module.tree):
            riff = isinstance(node, ast.Constant) and node.value == b"RIFF"
            wave_write = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "open"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "wave"
                and any(isinstance(a, ast.Constant) and a.value in ("w", "wb") for a in node.args[1:])
            )
            if (riff and not _compares(module.tree, node)) or wave_write:
                writers.append(f"{module.path.relative_to(ROOT)}:{node.lineno}")
    assert writers and all(w.startswith("edgetts/audio/wav.py:") for w in writers), writers


def _compares(tree: ast.Module, constant: ast.AST) -> bool:
    """Whether ``constant`` is read against (a reader checking a header), not written."""
    return any(isinstance(n, ast.Compare) and constant in [n.left, *n.comparators] for n in ast.walk(tree))


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


_LIST_EDITS = frozenset({"insert", "append", "extend", "remove", "pop", "clear", "reverse", "sort", "__setitem__"})
"""The methods that change a list in place: on ``sys.path`` each is an edit."""


def _path_edits(tree: ast.AST, first_line: int = 1) -> list[tuple[int, str]]:
    """Edits of ``sys.path`` and ``site.addsitedir`` calls in one module, through any alias, and in the code
    of its string constants (a child's ``python -c`` source) except those under a ``PLANTED*`` name."""
    names: dict[str, set[str]] = {"sys": {"sys"}, "site": {"site"}, "sys.path": set(), "site.addsitedir": set()}
    planted: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.get(alias.name, set()).add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                names.get(f"{node.module}.{alias.name}", set()).add(alias.asname or alias.name)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "").startswith("PLANTED") for t in node.targets):
            planted.update(id(n) for n in ast.walk(node.value))

    def named(node: ast.AST, module: str, attr: str) -> bool:  # sys.path, s.path, or a `from sys import path`
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return node.attr == attr and node.value.id in names[module]
        return isinstance(node, ast.Name) and node.id in names[f"{module}.{attr}"]

    def targets(node: ast.AST) -> list[ast.AST]:
        found = getattr(node, "targets", None) or [getattr(node, "target", None)]
        flat = [e for t in found for e in (t.elts if isinstance(t, ast.Tuple | ast.List) else [t])]
        # `sys.path = ...` and `sys.path[:0] = ...` edit it; a bare `path = ...` only rebinds a name
        return [
            t.value if isinstance(t, ast.Subscript) else t
            for t in flat
            if isinstance(t, ast.Subscript | ast.Attribute) or isinstance(node, ast.AugAssign)
        ]

    edits = []
    for node in ast.walk(tree):
        line = first_line + getattr(node, "lineno", 1) - 1
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LIST_EDITS:
            if named(node.func.value, "sys", "path"):
                edits.append((line, f"sys.path.{node.func.attr}"))
        if isinstance(node, ast.Call) and named(node.func, "site", "addsitedir"):
            edits.append((line, "site.addsitedir"))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            edits += [(line, "sys.path assigned") for t in targets(node) if named(t, "sys", "path")]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in planted:
            if "sys" in node.value or "site" in node.value:
                try:
                    edits += _path_edits(ast.parse(node.value), line)
                except (SyntaxError, ValueError):
                    pass  # text, not code (or not even encodable: a lone surrogate)
    return sorted(edits)


def path_edit_problems(root: Path, folders: Iterable[str]) -> list[str]:
    problems = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            problems += [f"{path.relative_to(root)}:{line}: {what}" for line, what in _path_edits(tree)]
    return problems


def test_nothing_edits_sys_path() -> None:
    """Tools run as ``python -m tools.NAME`` from the root (so this checkout's edgetts comes first: a
    benchmark once measured another clone's, 5 December) and tests import ``tools.*`` and ``support.*``
    through pytest's pythonpath; test children get ``cwd`` or ``PYTHONPATH``.  One way to find modules."""
    _fail_on(
        "sys.path edits (run with -m from the root, or set PYTHONPATH)", path_edit_problems(ROOT, ["tools", "tests"])
    )


PLANTED_PATH_EDITS = {
    "tools/a.py": "import sys\n\nsys.path.insert(0, '.')\nsys.path.append('x')\n",
    "tools/b.py": (
        "import site\nimport sys as s\nfrom sys import path as p\n\np += ['z']\n\n\ndef f():\n"
        "    s.path = ['x']\n    s.path[:0] = ['y']\n    p.extend(['w'])\n    site.addsitedir('v')\n"
    ),
    "tests/c.py": 'CHILD = """\nimport sys\nsys.path.insert(0, sys.argv[1])\n"""\n',
    "tests/fine.py": (
        "import os\nimport sys\n\nprint(sys.path[0], sys.path.index('x'), sys.path.copy())\npath = ['x']\n"
        "path.append('y')\nos.environ['PYTHONPATH'] = '.'\nTEXT = 'not code: sys.path.insert('\n"
    ),
}
"""One of each kind of sys.path edit, and things that are none: a test child's code in a string counts."""


def test_the_sys_path_checker_finds_planted_edits(tmp_path: Path) -> None:
    for name, text in PLANTED_PATH_EDITS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert path_edit_problems(tmp_path, ["tools", "tests"]) == [
        "tools/a.py:3: sys.path.insert",
        "tools/a.py:4: sys.path.append",
        "tools/b.py:5: sys.path assigned",
        "tools/b.py:9: sys.path assigned",
        "tools/b.py:10: sys.path assigned",
        "tools/b.py:11: sys.path.extend",
        "tools/b.py:12: site.addsitedir",
        "tests/c.py:3: sys.path.insert",
    ]
