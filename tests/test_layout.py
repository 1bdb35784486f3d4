"""The test suite's own house (docs/design.md, "The test suite"): every file where the
layout says, no test module importing another, helpers only in ``tests/helpers``, no
comment, docstring or document that speaks of an issue number or a deliverable instead
of behaviour — and the helpers themselves: the home guard and the workspace builder."""

from __future__ import annotations

import ast
import os
import pkgutil
import re
from pathlib import Path

import pytest

import aikito_mem
from tests.helpers.home import UNSET, child_env, isolate_home
from tests.helpers.workspace import WS

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

#: Rooms a top-level ``tests/test_<room>[_<aspect>].py`` may mirror: the modules and
#: packages of ``aikito_mem`` at any depth (by their last name, and by package and module
#: joined with ``_``: ``planner_skills`` for ``planner/skills.py``), and the benchmark
#: package.
_WALKED = [m.name.split(".")[1:] for m in
           pkgutil.walk_packages(aikito_mem.__path__, "aikito_mem.")]
ROOMS = frozenset(p[-1] for p in _WALKED) | frozenset(
    "_".join(p[i:]) for p in _WALKED for i in range(len(p))) | {"bench"}
#: Top-level test files about the repository rather than a room.
REPOSITORY = frozenset({
    "packaging",  # pyproject, Makefile targets, the pre-commit hook
    "getting_started",  # the README's "Getting started", followed literally
    "completion",  # shell completion of the command line, in real processes
    "layout",  # this file
    "rules",  # docs/rules.md defines every rule id the repository cites
    "helpers",  # the test helpers' own behaviour (the folding directory, [F4])
})
#: ``tests/conformance/test_sNN_<title>.py``: one file per SPEC section (§1 is vocabulary).
SECTIONS = range(2, 18)


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_file_is_where_the_layout_says() -> None:
    wrong = []
    for path in python_files():
        rel = path.relative_to(TESTS)
        name = path.name
        if len(rel.parts) == 1:
            ok = name in ("__init__.py", "conftest.py") or (
                name.startswith("test_") and any(
                    stem == room or stem.startswith(f"{room}_")
                    for stem in [name[len("test_"):-len(".py")]]
                    for room in ROOMS | REPOSITORY))
        elif len(rel.parts) == 2 and rel.parts[0] == "helpers":
            ok = not name.startswith("test_")
        elif len(rel.parts) == 2 and rel.parts[0] == "safety":
            ok = name == "__init__.py" or re.fullmatch(r"test_[a-z0-9_]+\.py", name) is not None
        elif len(rel.parts) == 2 and rel.parts[0] == "conformance":
            m = re.fullmatch(r"test_s(\d\d)_[a-z0-9_]+\.py", name)
            ok = name in ("__init__.py", "conftest.py", "_support.py") or (
                m is not None and int(m.group(1)) in SECTIONS)
        else:
            ok = False
        if not ok:
            wrong.append(str(rel))
    assert wrong == [], (
        "tests/ holds test_<room>.py, safety/, conformance/test_sNN_<title>.py, helpers/ "
        f"and conftest.py only (docs/design.md, 'The test suite'): {wrong}")


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
            out.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
    return out


def test_no_test_module_imports_another_or_conftest() -> None:
    """What two modules share lives in ``tests/helpers``; conftest holds fixtures only."""
    bad = {str(path.relative_to(TESTS)): names for path in python_files()
           if (names := [n for n in _imports(path)
                         if re.match(r"tests\.(?:\w+\.)*(?:test_\w+|conftest)(?:\.|$)", n)])}
    assert bad == {}


WORDS = re.compile(r"\b(issue|deliverable) [0-9]+", re.IGNORECASE)


def test_no_text_speaks_of_issue_numbers_or_deliverables() -> None:
    """Code, tests and docs describe behaviour and cite SPEC ids: an issue number or a
    deliverable is a word no reader of the repository can look up."""
    roots = [REPO / "aikito_mem", TESTS, REPO / "docs", REPO / "README.md"]
    found = []
    for root in roots:
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for path in files:
            if path.suffix not in (".py", ".md") or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if WORDS.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []


# --------------------------------------------------------------------------- the helpers


def test_harness_home_is_isolated(ws: WS) -> None:
    home = os.environ["HOME"]
    import pwd

    assert home != pwd.getpwuid(os.getuid()).pw_dir
    assert Path(home).is_dir() and not any(Path(home).iterdir())
    assert os.environ["XDG_CONFIG_HOME"] == f"{home}/.config"
    assert not set(UNSET) & set(os.environ)
    assert not ws.root.startswith(home)
    child = child_env(NO_COLOR="1")
    assert child["HOME"] == home and child["NO_COLOR"] == "1"
    assert not [k for k in child if k.startswith(("AIKITO", "XDG_"))]


def test_the_home_guard_unsets_what_would_point_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in UNSET:
        monkeypatch.setenv(name, "1")
    home = isolate_home(monkeypatch, tmp_path / "h")
    assert os.environ["HOME"] == str(home) and home.is_dir()
    assert os.environ["XDG_CONFIG_HOME"] == str(home / ".config")
    assert not set(UNSET) & set(os.environ)


def test_harness_workspace_builder(ws: WS) -> None:
    assert ws.add_file("team/a.md", "hi") == f"{ws.root}/memory/team/a.md"
    assert ws.add_dir("glossary") == f"{ws.root}/memory/glossary"
    assert ws.add_notes("demo") == f"{ws.root}/projects/demo/memory/notes"
    assert ws.add_notes("demo", legacy=True) == f"{ws.root}/memory/demo/notes"
    co = ws.checkout("laptop")
    assert os.path.isdir(co) and co == os.path.realpath(co)
    ws.write_config("demo", memory=["team/a.md", "glossary"], paths={"laptop": co})
    project = ws.project("demo")
    assert project.config.memory == ("team/a.md", "glossary")
    assert [(c.label, c.path) for c in project.config.candidates] == [("laptop", co)]
    plan = project.plan()
    assert sorted(op.target for op in plan.operations) == [
        ws.runtime(co, "glossary"), ws.runtime(co, "notes"), ws.runtime(co, "team/a.md")]
    ws.write_config("demo", raw='memory = "x.md"\n')
    assert Path(ws.config_path("demo")).read_text() == 'memory = "x.md"\n'


# ------------------------------------------------------------------ the package's house

PACKAGE = REPO / "aikito_mem"
#: The runtime tree and the workspace's canonical sources, as a path is spelt in code: a
#: string (not a docstring) holding one of them, or an f-string piece that joins one on.
_RUNTIME = re.compile(r"(?<!\w)\.agents(?:/|$)|(?:^|/)\.agents\b")
_JOINED = re.compile(r"^/(?:\.agents|memory|skills|projects|agents|AGENTS\.md)(?:/|$|\b)")


def package_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the constant nodes that are docstrings (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _spelt_paths(path: Path, base: Path = REPO) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
            words = text.split()
            if _JOINED.match(text) or (len(words) == 1 and _RUNTIME.search(text)):
                found.append(f"{path.relative_to(base)}:{node.lineno}: {text!r}")
    return found


def test_runtime_paths_are_spelt_only_in_layout() -> None:
    """[O3], [S1], [S2], [G2], [G3]: every room asks ``aikito_mem.layout`` where the
    runtime tree and the canonical sources are; help and message prose may name them."""
    spelt = [hit for path in package_files() if path.name != "layout.py"
             for hit in _spelt_paths(path)]
    assert spelt == []


def test_the_path_detector_sees_a_spelling(tmp_path: Path) -> None:
    """The detector above is not vacuous: each way a path used to be spelt is found."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Docstrings may say .agents/memory."""\n'
        'A = ".agents/skills"\n'
        'B = f"{ws}/projects/{p}/memory"\n'
        'C = f"{co}/.agents"\n'
        'D = "help prose naming .agents/memory/ is fine"\n'
        'E = "aikito.agents/1"\n', encoding="utf-8")  # a schema name, not a path
    hits = [h.split(": ", 1)[1] for h in _spelt_paths(sample, tmp_path)]
    assert hits == ["'.agents/skills'", "'/projects/'", "'/memory'", "'/.agents'"]


def test_top_level_modules_are_few() -> None:
    """The foundations and the facades sit at the top; every family is a package."""
    top = sorted(p.stem for p in PACKAGE.glob("*.py")
                 if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= 16, top


def test_no_module_over_500_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in package_files()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_imports(path: Path, modules: set[str]) -> tuple[set[str], list[str]]:
    """(the package modules ``path`` imports anywhere — lazily too —, the private names
    of another module it imports)."""
    me = _module_name(path)
    deps: set[str] = set()
    private: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("aikito_mem"):
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in modules:
                    deps.add(full)
                    continue
                deps.add(node.module)
                if alias.name.startswith("_") and not alias.name.startswith("__") \
                        and node.module != me:
                    private.append(f"{me}: {full}")
        elif isinstance(node, ast.Import):
            deps.update(a.name for a in node.names if a.name.startswith("aikito_mem"))
    deps.discard(me)
    return deps & modules, private


def _import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in package_files()}
    return {m: _package_imports(p, set(files))[0] for m, p in files.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                found.append(sorted([v, *comp]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    """Data flows one way through the floors (docs/design.md): no two rooms import each
    other, not even lazily, inside a function."""
    assert _cycles(_import_graph()) == []


#: The floors that must never look up (docs/design.md): observation and the planners sit
#: below the writer, the commands, the renderers and the command line; the planners are
#: pure and never observe.
_BELOW = {
    "world": ("planner", "executor", "commands", "render", "cli"),
    "planner": ("world", "executor", "commands", "render", "cli"),
}


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import (lazy ones included) of a floor of :data:`_BELOW` into one of the
    floors it must not depend on."""
    def floor(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    return sorted(f"{m} -> {d}" for m, deps in graph.items() for d in deps
                  if floor(d) in _BELOW.get(floor(m), ()))


def test_no_arrow_points_up() -> None:
    """Observation never imports a planner (a path rule both need lives in
    ``aikito_mem.layout``, a value both need in ``aikito_mem.views``), nor the writer,
    the commands, the renderers or the command line; the planners import none of those
    nor observation — not even lazily."""
    assert _upward(_import_graph()) == []


def test_the_arrow_detector_sees_an_arrow() -> None:
    graph = {"aikito_mem.world.a": {"aikito_mem.planner.b", "aikito_mem.model"},
             "aikito_mem.planner.b": {"aikito_mem.layout", "aikito_mem.cli"},
             "aikito_mem.executor.c": {"aikito_mem.planner.b", "aikito_mem.world.a"}}
    assert _upward(graph) == ["aikito_mem.planner.b -> aikito_mem.cli",
                              "aikito_mem.world.a -> aikito_mem.planner.b"]


def test_the_cycle_detector_sees_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_of_another_modules_private_name() -> None:
    """A room imports only the public names of another; the tests too (a private helper
    a test needs gets a public name).  Monkeypatching a seam is not an import."""
    modules = {_module_name(p) for p in package_files()}
    private = [hit for path in [*package_files(), *python_files()]
               for hit in _package_imports(path, modules)[1]]
    assert private == []


def _long_functions(path: Path, limit: int = 60) -> list[str]:
    return [f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({n} lines)"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (n := (node.end_lineno or node.lineno) - node.lineno + 1) > limit]


def test_few_functions_over_60_lines() -> None:
    """Functions of one job: at most four over 60 lines in the whole package (the
    writer's loop, the tree removal, the workspace resolution order, the pointer plan)."""
    long = [hit for path in package_files() for hit in _long_functions(path)]
    assert len(long) <= 4, long
