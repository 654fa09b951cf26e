"""What the modules under a folder import, read with ``ast`` (never imported, so it costs well under a
second): the import graph test_layout checks for cycles and layers, test_unused_modules for modules
nothing uses."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "edgetts"


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


def is_package(module: Module) -> bool:
    return module.path.name == "__init__.py"


def _base(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names, relative ones resolved against ``module``."""
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    keep = len(parts) - node.level + (1 if is_package(module) else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def resolve(name: str, modules: dict[str, Module]) -> str:
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
                yield Import(module.name, resolve(alias.name, modules), module.path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in modules else base
                yield Import(module.name, resolve(target, modules), module.path, node.lineno)


def all_imports(modules: dict[str, Module]) -> list[Import]:
    return [imp for module in modules.values() for imp in imports_of(module, modules)]


__all__ = ["PACKAGE", "Import", "Module", "all_imports", "imports_of", "is_package", "load_modules", "resolve"]
