"""Config errors: what an operator reads, and what a section's check raises.

Every problem is one line, ``FILE:LINE key/path: problem``, so an operator can
fix an edit before ``systemctl reload``.
"""

from __future__ import annotations


def problem_line(file: str, line: int, where: str, problem: str) -> str:
    """One problem as the operator reads it; `where` is a key path or `(yaml)`, `(file)`, `(top)`."""
    return f"{file}:{line} {where}: {problem}"


class ConfigError(Exception):
    """One or more problems in a config file; ``str()`` is one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class FieldError(Exception):
    """A problem at a key path, before the file and line are known.

    A section's ``validate()`` raises it with the path below the section; the
    loader prefixes the section and finds the line.
    """

    def __init__(self, path: tuple[str, ...], problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem
