"""Every module under edgetts/ is used: something imports it, or it is run by name.

Left-overs (a module kept after what used it went, or one written for a measurement and never wired
in) are found here, not by a reader who wonders why it is there.  A module is used when another
edgetts module imports it (anywhere in the file, as test_layout reads imports), when it is a console
script's module (pyproject ``[project.scripts]``), a ``__main__`` (``python -m``), or named by a
string to ``importlib.import_module`` / ``__import__``; a package when any module in it is used
(importing ``a.b`` runs ``a/__init__.py``).  Tests and tools do not count: a module only they use is
not part of the product.  Pure ``ast`` like test_layout: nothing is imported.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

from support.imports import Module, all_imports, is_package, load_modules, resolve

ROOT = Path(__file__).resolve().parents[1]

_LOADERS = {"import_module", "__import__"}
"""Calls that import a module named by a string (``importlib.import_module``, the builtin)."""


def script_modules(pyproject: Path) -> set[str]:
    """The modules of the console scripts ``pyproject`` declares (``name = "module:function"``)."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    return {target.split(":")[0].strip() for target in project.get("scripts", {}).values()}


def _package_of(module: Module) -> str:
    return module.name if is_package(module) else module.name.rpartition(".")[0]


def _absolute(name: str, package: str) -> str:
    """``name`` made absolute the way importlib does (``..b`` in package ``a.x`` is ``a.b``)."""
    rest = name.lstrip(".")
    parts = package.split(".")
    parts = parts[: len(parts) - (len(name) - len(rest)) + 1]
    return ".".join(parts + ([rest] if rest else []))


def dynamic_loads(module: Module) -> set[str]:
    """Module names ``module`` hands, as string constants, to a call that imports by name; a
    relative one is resolved against the ``package`` argument when that is a constant, else
    against ``module``'s own package (``__package__``)."""
    found = set()
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        name = node.args[0]
        if called not in _LOADERS or not isinstance(name, ast.Constant) or not isinstance(name.value, str):
            continue
        if not name.value.startswith("."):
            found.add(name.value)
            continue
        package = node.args[1] if len(node.args) > 1 else None
        package = next((k.value for k in node.keywords if k.arg == "package"), package)
        given = package.value if isinstance(package, ast.Constant) and isinstance(package.value, str) else None
        found.add(_absolute(name.value, given or _package_of(module)))
    return found


def unused_modules(root: Path) -> list[Module]:
    """The modules under ``root``/edgetts that nothing uses (see the module docstring), by name."""
    modules = load_modules(root)
    used = {imp.target for imp in all_imports(modules) if imp.target in modules and imp.target != imp.source}
    used |= {resolve(name, modules) for name in script_modules(root / "pyproject.toml")}
    used |= {name for name in modules if name.endswith(".__main__")}
    for module in modules.values():
        used |= {resolve(name, modules) for name in dynamic_loads(module) if resolve(name, modules) != module.name}
    for name in list(used):  # a used module's packages run first
        parts = name.split(".")
        used |= {".".join(parts[:n]) for n in range(1, len(parts))}
    return [modules[name] for name in sorted(set(modules) - used)]


def _fail_if_unused(root: Path) -> None:
    unused = unused_modules(root)
    if unused:
        listing = "\n".join(f"  {m.name} ({m.path.relative_to(root)})" for m in unused)
        pytest.fail(f"modules under edgetts/ that nothing imports or runs ({len(unused)}):\n{listing}", pytrace=False)


def test_every_module_under_edgetts_is_used() -> None:
    _fail_if_unused(ROOT)


PLANTED = {
    "pyproject.toml": '[project]\nname = "edgetts"\n\n[project.scripts]\nedgetts = "edgetts.cli.main:main"\n',
    "edgetts/__init__.py": "",
    "edgetts/cli/__init__.py": "",
    "edgetts/cli/main.py": "def main():\n    from edgetts.voice import used\n",
    "edgetts/cli/__main__.py": "from edgetts.cli.main import main\n",
    "edgetts/tool/__init__.py": "",
    "edgetts/tool/__main__.py": "from ..voice.deep.nested import x\n",
    "edgetts/voice/__init__.py": "",
    "edgetts/voice/used.py": (
        "import importlib\n\nfrom . import helper\n\n"
        'importlib.import_module("edgetts.voice.plugin")\n'
        'importlib.import_module(".relative", __package__)\n'
        'importlib.import_module("..voice.given", "edgetts.voice")\n'
        '__import__("edgetts.voice.builtin")\n'
    ),
    "edgetts/voice/helper.py": "import os\n\nfrom edgetts.voice import mentions\n",
    "edgetts/voice/plugin.py": "",
    "edgetts/voice/relative.py": "",
    "edgetts/voice/given.py": "",
    "edgetts/voice/builtin.py": "",
    "edgetts/voice/deep/__init__.py": "",
    "edgetts/voice/deep/nested.py": "x = 1\n",
    "edgetts/voice/orphan.py": "from edgetts.voice import helper\n",
    "edgetts/voice/self_only.py": (
        "import importlib\n\nfrom edgetts.voice import self_only\n\n"
        'importlib.import_module("edgetts.voice.self_only")\n'
    ),
    "edgetts/voice/named_only.py": "",
    "edgetts/voice/mentions.py": 'NAME = "edgetts.voice.named_only"\n',
    "edgetts/lonely/__init__.py": "",
    "edgetts/lonely/inner.py": "from edgetts.voice import helper\n",
}
"""A tree with each way of being used, and modules nothing uses: one that only imports others, one
that only imports itself, a package whose modules nobody imports, a module only named in a plain string."""


def test_the_checker_finds_planted_unused_modules(tmp_path: Path) -> None:
    for name, text in PLANTED.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    with pytest.raises(pytest.fail.Exception) as failed:
        _fail_if_unused(tmp_path)
    assert str(failed.value) == (
        "modules under edgetts/ that nothing imports or runs (5):"
        "\n  edgetts.lonely (edgetts/lonely/__init__.py)"
        "\n  edgetts.lonely.inner (edgetts/lonely/inner.py)"
        "\n  edgetts.voice.named_only (edgetts/voice/named_only.py)"
        "\n  edgetts.voice.orphan (edgetts/voice/orphan.py)"
        "\n  edgetts.voice.self_only (edgetts/voice/self_only.py)"
    )
    for name in (
        "lonely/__init__.py",
        "lonely/inner.py",
        "voice/named_only.py",
        "voice/orphan.py",
        "voice/self_only.py",
    ):
        (tmp_path / "edgetts" / name).unlink()
    _fail_if_unused(tmp_path)  # what is left is all used: each way of being used counts


def test_relative_names_resolve_as_importlib_resolves_them() -> None:
    import importlib.util

    for name, package in ((".b", "a.x"), ("..b", "a.x"), ("..", "a.x.y"), (".", "a")):
        assert _absolute(name, package) == importlib.util.resolve_name(name, package)
