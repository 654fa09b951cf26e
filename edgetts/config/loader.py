"""Reading the YAML file into a :class:`~edgetts.config.document.Config`.

YAML is composed (not loaded) so every key path keeps its line; each value is
converted to its field's type, unknown keys are refused, and every broken
section is reported in one run, one ``FILE:LINE key/path: problem`` a line.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import yaml

from edgetts.config.document import Config
from edgetts.config.errors import ConfigError, FieldError, problem_line
from edgetts.runtime.settings import RuntimeConfigError

DEFAULT_CONFIG_PATH = Path("/etc/edgetts/edgetts.yaml")


class _Located:
    """Plain data from YAML plus the line of every key path."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, ...], int] = {}

    def line_of(self, path: tuple[str, ...]) -> int:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), 1)


def _plain(node: yaml.Node, path: tuple[str, ...], loc: _Located, problems: list[str], name: str) -> Any:
    """Turn a composed YAML node into plain data, recording lines and duplicate keys."""
    loc.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(_scalar(key_node))
            sub = path + (key,)
            if key in out:
                problems.append(problem_line(name, key_node.start_mark.line + 1, "/".join(sub), "duplicate key"))
                continue
            loc.lines[sub] = key_node.start_mark.line + 1
            out[key] = _plain(value_node, sub, loc, problems, name)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v, path + (str(i),), loc, problems, name) for i, v in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    """Let the safe loader resolve a scalar's tag (int, float, bool, null, str, date)."""
    try:
        return yaml.SafeLoader("").construct_object(node, deep=True)
    except ValueError:  # looks like a date and is none (2026-13-01): its text, which the field's check refuses
        return node.value


def _yaml_key(f: dataclasses.Field[Any]) -> str:
    """A field's key in the YAML: its name, or ``metadata["key"]`` where that is a Python keyword (`from`)."""
    return str(f.metadata.get("key", f.name))


def _type_name(tp: Any) -> str:
    mapping = {str: "a string", int: "an integer", float: "a number", bool: "true or false", date: "a date"}
    if tp in mapping:
        return mapping[tp]
    if typing.get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, path: tuple[str, ...]) -> Any:
    """`value` from YAML as the field type `tp`, or a FieldError saying what was expected."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _convert_union(typing.get_args(tp), value, path)
    if origin is Literal:
        choices = typing.get_args(tp)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # `protocol: 5` means "5"
        if value not in choices:
            raise FieldError(path, f"expected {_type_name(tp)}, got {value!r}")
        return value
    if origin is tuple:
        (item_tp, _ellipsis) = typing.get_args(tp)
        if not isinstance(value, list):
            raise FieldError(path, f"expected a list, got {value!r}")
        return tuple(_convert(item_tp, v, path + (str(i),)) for i, v in enumerate(value))
    if origin is dict:
        _key_tp, item_tp = typing.get_args(tp)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise FieldError(path, f"expected a mapping, got {value!r}")
        return {k: _convert(item_tp, v, path + (k,)) for k, v in value.items()}
    if dataclasses.is_dataclass(tp):
        return _build(typing.cast(type, tp), value, path)
    return _convert_scalar(tp, value, path)


def _convert_union(args: tuple[Any, ...], value: Any, path: tuple[str, ...]) -> Any:
    """The first member type that takes `value`; a one-member union reports that member's problem."""
    if value is None and type(None) in args:
        return None
    errors = []
    shaped: FieldError | None = None
    for arg in args:
        if arg is type(None):
            continue
        try:
            return _convert(arg, value, path)
        except FieldError as exc:
            errors.append(_type_name(arg))
            last = exc
            if shaped is None and isinstance(value, dict) and dataclasses.is_dataclass(arg):
                shaped = exc  # a mapping meant as this dataclass (`voices/<name>`): its own problem says more
    if len(errors) == 1:
        raise last
    if shaped is not None:
        raise shaped
    raise FieldError(path, f"expected {' or '.join(errors)}, got {value!r}")


def _convert_scalar(tp: Any, value: Any, path: tuple[str, ...]) -> Any:
    # bool is an int to Python but never a number to an operator: `port: true` is an error.
    if tp is bool:
        if not isinstance(value, bool):
            raise FieldError(path, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(path, f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FieldError(path, f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise FieldError(path, f"expected a string, got {value!r}")
        return value
    if tp is date:
        if isinstance(value, date) and not isinstance(value, datetime):
            return value
        if isinstance(value, str):
            try:
                return date.fromisoformat(value)
            except ValueError:
                pass
        raise FieldError(path, f"expected a date (YYYY-MM-DD), got {value!r}")
    raise TypeError(f"unsupported config type {tp!r}")  # a bug in this package, not in the file


def _build(cls: type, data: Any, path: tuple[str, ...]) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FieldError(path, f"expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {_yaml_key(f): f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            raise FieldError(path + (key,), f"unknown key (known: {', '.join(sorted(fields))})")
    for key, f in fields.items():
        if key not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise FieldError(path + (key,), "required key missing")
    kwargs = {fields[k].name: _convert(hints[fields[k].name], v, path + (k,)) for k, v in data.items()}
    obj = cls(**kwargs)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        try:
            validate()
        except (FieldError, RuntimeConfigError) as exc:
            raise FieldError(path + exc.path, exc.problem) from None
    return obj


def _collect(cls: type, data: dict[str, Any], loc: _Located, name: str) -> tuple[Any, list[str]]:
    """Build section by section so one run reports a problem in every broken section."""
    problems: list[str] = []

    def report(exc: FieldError) -> None:
        problems.append(problem_line(name, loc.line_of(exc.path), "/".join(exc.path), exc.problem))

    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            report(FieldError((key,), f"unknown section (known: {', '.join(sorted(names))})"))
            continue
        try:
            kwargs[key] = _convert(hints[key], value, (key,))
        except FieldError as exc:
            report(exc)
    if problems:
        return None, problems
    obj = cls(**kwargs)
    try:
        obj.validate()
    except FieldError as exc:
        report(exc)
        return None, problems
    return obj, problems


def parse_config(text: str, name: str = "<config>") -> Config:
    """Parse YAML text into a :class:`Config`; raises :class:`ConfigError`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([problem_line(name, line, "(yaml)", problem)]) from None
    if node is None:
        return Config()
    loc = _Located()
    problems: list[str] = []
    data = _plain(node, (), loc, problems, name)
    if not isinstance(data, dict):
        raise ConfigError([problem_line(name, 1, "(top)", "expected a mapping of sections")])
    config, more = _collect(Config, data, loc, name)
    problems += more
    if problems:
        raise ConfigError(problems)
    return config


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a config file; raises :class:`ConfigError` (one line per problem)."""
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError([problem_line(name, 1, "(file)", f"cannot read: {reason}")]) from None
    return parse_config(text, name)


def key_line(path: str | os.PathLike[str], key_path: tuple[str, ...]) -> int:
    """The line of ``key_path`` in the YAML file ``path`` (of its nearest parent present; 1 when unreadable).

    For checks made after loading, e.g. `check-config` finding that voice/model does not exist.
    """
    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return 1
    if node is None:
        return 1
    loc = _Located()
    _plain(node, (), loc, [], os.fspath(path))
    return loc.line_of(key_path)


def dump_config(config: Config) -> str:
    """The effective config as YAML (what `edgetts print-config` prints)."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False, default_flow_style=False)
