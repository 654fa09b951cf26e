"""The README stays a short guide and docs/ a reference that names only what exists.

Plain text checks over README.md and docs/*.md (nothing is imported; module names are resolved
to files and read with ``ast``), so they run in well under a second:

* README.md has at most 300 lines and the report tool's two marker lines;
* every repository path the documents name exists: in inline code, fenced code and relative
  links; a path under one of :data:`PREFIXES` (``:LINE`` and ``::test`` suffixes stripped), a
  dotted module (``edgetts.daemon.loop``, ``tools.slowboard``, ``support.quota``; an attribute
  after it must be defined at the module's top level), ``python -m tools.X``, and a link's
  ``#anchor`` against the target's headings;
* no dated run logs or issue narrative: they belong to git history and, for figures, to the
  generated docs/benchmarks.md.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
GENERATED = DOCS / "benchmarks.md"
"""Written wholly by `python -m tools.report`: it carries commits and machines, so it is not
held to the narrative rules; the paths it names are still checked."""

MAX_README_LINES = 300
MARKERS = ("<!-- report:headline:start -->", "<!-- report:headline:end -->")

PREFIXES = ("edgetts/", "tools/", "tests/", "scripts/", "docs/", "config/", "systemd/", "benchmarks/", ".ci/")
"""A word in code that starts with one of these is a repository path."""

RUN_TIME_ONLY = ("benchmarks/results/",)
"""Folders whose files exist only once a tool has run (each benchmark writes its JSON there):
a path under one is checked only for the folder itself."""

TOPIC_LEAVES = frozenset({"announce", "events", "status", "control", "config", "state", "voice"})
"""Last levels of MQTT topics.  The default topic prefix is `edgetts`, so `edgetts/hall-1/status`
reads like a path under the package; a word under `edgetts/` ending in one of these (no file
suffix) is a topic, not a path."""

FILE_SUFFIXES = frozenset({"yaml", "yml", "service", "json", "md", "py", "txt", "onnx", "wav", "conf", "sh", "toml"})
"""`edgetts.yaml` and `edgetts.service` are file names, not modules of the package."""

DOTTED_ROOTS = {"edgetts": ROOT / "edgetts", "tools": ROOT / "tools", "support": ROOT / "tests" / "support"}

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_RUN_MODULE = re.compile(r"python3?\s+-m\s+(tools(?:\.\w+)+)")
_DOTTED = re.compile(r"^(?:edgetts|tools|support)(?:\.[A-Za-z_]\w*)+")
_LINE_SUFFIX = re.compile(r":\d+(?:-\d+)?$")
_PLACEHOLDER = re.compile(r"<[^>]*>")
_STRIP = "\"'`()[]{},;:.!?"

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
NARRATIVE = (
    (re.compile(r"\bissues? \d+", re.IGNORECASE), "an issue number"),
    (re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTHS})\b"), "a date"),
    (re.compile(rf"\b(?:{_MONTHS}) \d{{1,2}}(?:st|nd|rd|th)?\b"), "a date"),
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
    # A bare `\bsessions?\b` would also forbid the MQTT persistent session, the console's login
    # session and onnxruntime's InferenceSession, which the docs must name; a work session is named
    # by which one it was.
    (
        re.compile(
            rf"\b(?:this|that|last|previous|next|earlier|later|{_ORDINALS}|\d+(?:st|nd|rd|th)) sessions?\b", re.I
        ),
        "a work session",
    ),
    (re.compile(r"\bsessions? ago\b", re.IGNORECASE), "a work session"),
    (re.compile(r"\btried and not kept\b", re.IGNORECASE), "a diary entry"),
    (re.compile(r"\b(?:this|last) week\b", re.IGNORECASE), "a diary entry"),
)
"""What a run log or a diary says and a reference does not (inline code is not prose: a normaliser
example such as `3 March` is input, not a date)."""


def documents() -> list[Path]:
    """README.md and every page of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def _lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, inside a fenced code block) for every line but the fences."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        yield number, line, fenced


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a markdown text's headings (repeats get -1, -2, ... as on GitHub)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _number, line, fenced in _lines(text):
        match = re.match(r"#{1,6}\s+(.*)", line)
        if fenced or not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _top_level_names(module: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def dotted_problem(name: str, root: Path = ROOT) -> str | None:
    """Why a dotted module name (with an attribute, maybe) names nothing in the tree, or None."""
    parts = name.split(".")
    base = {k: root / v.relative_to(ROOT) for k, v in DOTTED_ROOTS.items()}[parts[0]]
    for cut in range(len(parts), 1, -1):
        where = base.joinpath(*parts[1:cut])
        module = where.with_suffix(".py") if where.with_suffix(".py").is_file() else where / "__init__.py"
        if not (module.is_file() or where.is_dir()):
            continue
        rest = parts[cut:]
        if rest and module.is_file() and rest[0] not in _top_level_names(module):
            return f"{module.relative_to(root)} defines no {rest[0]}"
        return None
    return "no such module"


def path_problem(path: str, root: Path = ROOT) -> str | None:
    """Why a repository path named in a document does not exist, or None."""
    path = path.split("::")[0]
    path = _LINE_SUFFIX.sub("", path).rstrip(_STRIP.replace("/", ""))
    if any(c in path for c in "$#+") or path.startswith("edgetts/") and _is_topic(path):
        return None
    for folder in RUN_TIME_ONLY:
        if path.startswith(folder):
            return None if (root / folder).is_dir() else f"{folder} is not a directory"
    if "<" in path or "*" in path:
        pattern = _PLACEHOLDER.sub("*", path).rstrip("/")
        return None if any(root.glob(pattern)) else "nothing matches"
    return None if (root / path).exists() else "no such file or directory"


def _is_topic(path: str) -> bool:
    leaf = path.rstrip("/").rsplit("/", 1)[-1]
    return leaf in TOPIC_LEAVES


def _code_words(code: str) -> Iterator[tuple[str, str]]:
    """("path" | "module", word) for each candidate in a piece of code, each once."""
    found = {("module", match.group(1)): None for match in _RUN_MODULE.finditer(code)}
    for word in code.split():
        word = word.strip(_STRIP.replace(".", "").replace(":", ""))
        word = word.removeprefix("./")
        dotted = _DOTTED.match(word)
        if word.startswith(PREFIXES):
            found["path", word] = None
        elif dotted and dotted.group(0).rsplit(".", 1)[-1] not in FILE_SUFFIXES:
            found["module", dotted.group(0)] = None
    yield from found


def missing_paths(doc: Path, text: str, root: Path = ROOT) -> list[str]:
    """Every path, module and relative link of ``text`` (the document ``doc``) that is not there,
    as `FILE:LINE: what (why)`."""
    problems: list[str] = []
    where = doc.relative_to(root) if doc.is_relative_to(root) else doc
    for number, line, fenced in _lines(text):
        codes = [line] if fenced else [m.group(2) for m in _CODE_SPAN.finditer(line)]
        for code in codes:
            for kind, word in _code_words(code):
                problem = path_problem(word, root) if kind == "path" else dotted_problem(word, root)
                if problem:
                    problems.append(f"{where}:{number}: `{word}` ({problem})")
        if fenced:
            continue
        for match in _LINK.finditer(_CODE_SPAN.sub("", line)):
            problem = link_problem(doc, match.group(1), root)
            if problem:
                problems.append(f"{where}:{number}: link {match.group(1)} ({problem})")
    return problems


def link_problem(doc: Path, target: str, root: Path = ROOT) -> str | None:
    """Why a relative markdown link of ``doc`` leads nowhere, or None (web links are not followed)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):
        return None
    file, _, anchor = target.partition("#")
    dest = (doc.parent / file).resolve() if file else doc
    if not dest.exists():
        return "no such file or directory"
    if not dest.is_relative_to(root.resolve()):
        return "outside the repository"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
        return f"no heading #{anchor} in {dest.name}"
    return None


def narrative(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the words) of each dated run log or issue narrative in prose."""
    found: list[tuple[int, str, str]] = []
    for number, line, _fenced in _lines(text):
        prose = _CODE_SPAN.sub("", line)
        for pattern, what in NARRATIVE:
            for match in pattern.finditer(prose):
                found.append((number, what, match.group(0)))
    return found


# -- the repository's documents ---------------------------------------------------------------


def test_readme_is_a_short_guide() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; reference material goes to docs/"


def test_readme_keeps_the_report_tools_markers() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    where = [[i for i, line in enumerate(lines) if line.strip() == marker] for marker in MARKERS]
    assert [len(w) for w in where] == [1, 1], f"each of {MARKERS} must be a line of README.md exactly once"
    assert where[0][0] < where[1][0], "the headline's start marker must come before its end marker"
    assert "python -m tools.report" in "\n".join(lines)


def test_every_named_path_exists() -> None:
    problems = [p for doc in documents() for p in missing_paths(doc, doc.read_text(encoding="utf-8"))]
    assert not problems, "named in the docs but not in the repository:\n" + "\n".join(problems)


def test_no_dated_run_logs_or_issue_narrative() -> None:
    found = [
        f"{doc.relative_to(ROOT)}:{number}: {what}: {words!r}"
        for doc in documents()
        if doc != GENERATED
        for number, what, words in narrative(doc.read_text(encoding="utf-8"))
    ]
    assert not found, "run logs and issue narrative belong to git history:\n" + "\n".join(found)


# -- the finders can fail ----------------------------------------------------------------------

PLANTED = """\
# Planted

The loop is `edgetts/daemon/loop.py:265` and runs `python -m tools.bench_engine --runs 3`.
Admission is `edgetts/daemon/admission/no_such_stage.py:12`, timed by `python -m tools.no_such_bench`.
`edgetts.daemon.loop.Daemon` is real, `edgetts.daemon.loop.NoSuchThing` and `edgetts.no_such.module` are not.
Topics such as `edgetts/hall-1/announce` and files such as `edgetts.yaml` are no paths.
Links: [the daemon](daemon.md#events), [nothing](no-such-page.md), [a lost heading](daemon.md#no-such-heading).

```bash
python -m tools.soak --count 10 && bash scripts/no-such-script.sh
```
"""


def test_the_path_finder_reports_each_missing_path_with_its_line() -> None:
    problems = missing_paths(DOCS / "planted.md", PLANTED)
    text = "\n".join(problems)
    for line, word in (
        (4, "edgetts/daemon/admission/no_such_stage.py:12"),
        (4, "tools.no_such_bench"),
        (5, "edgetts.daemon.loop.NoSuchThing"),
        (5, "edgetts.no_such.module"),
        (7, "link no-such-page.md"),
        (7, "link daemon.md#no-such-heading"),
        (10, "scripts/no-such-script.sh"),
    ):
        assert any(p.startswith(f"docs/planted.md:{line}: ") and word in p for p in problems), (word, text)
    assert len(problems) == 7, text  # the real paths, the topic, the file name and the good link pass


def test_the_narrative_finder_flags_logs_and_leaves_reference_alone() -> None:
    planted = """\
**The runs of 5 December, late** gave these figures (issue 14).
Tried and not kept in the ninth session: larger windows. Measured on 2026-11-30, last session.
The MQTT persistent session keeps what is queued; `/api/session` starts a console session.
`3 March` and `1st of May` are read as dates by the normaliser.
"""
    found = narrative(planted)
    flagged = {(number, words) for number, _what, words in found}
    assert flagged == {
        (1, "5 December"),
        (1, "issue 14"),
        (2, "Tried and not kept"),
        (2, "ninth session"),
        (2, "2026-11-30"),
        (2, "last session"),
    }, found
