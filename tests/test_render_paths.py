"""[U2] the paths inside an error message as printed (``render.text.pasted``): written
where the command ran — relative below it, ``~/`` under home, else absolute — and never
mangled: the current directory itself, a name starting with ``-`` or ``~``, spaces,
quotes, a directory whose name another path's starts with, bytes that are not UTF-8,
URLs, ``a/b`` words that are no paths; ``--json`` keeps the message absolute."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aikito_mem.render.text import Display, pasted
from tests.helpers.cli import invoke
from tests.helpers.workspace import WS

HOME = "/home/u"
CWD = "/home/u/ws/projects/demo"


def here(message: str, cwd: str = CWD, home: str | None = HOME) -> str:
    return pasted(message, Display(cwd=cwd, home=home))


@pytest.mark.parametrize(("message", "shown"), [
    # The current directory itself, written with a trailing slash: ./, never nothing.
    (f"the directory {CWD}/ exists", "the directory ./ exists"),
    (f"({CWD}/)", "(./)"),
    (f"ends {CWD}/", "ends ./"),
    # A name that would read as an option or a home directory once relative.
    (f"cannot read {CWD}/-n: denied", "cannot read ./-n: denied"),
    (f"move {CWD}/~root out of the way", "move ./~root out of the way"),
    # What reads as the path it was.
    (f"edit {CWD}/agent.toml", "edit agent.toml"),
    (f"in {CWD}/.", "in ."),
    (f"under {CWD}/-/x", "under ./-/x"),
])
def test_a_path_below_the_current_directory_pastes_as_itself(message: str,
                                                             shown: str) -> None:
    assert here(message) == shown


@pytest.mark.parametrize(("message", "shown"), [
    # Another directory whose name the current directory's starts with: under home.
    (f"{CWD}2/x and {CWD}-old/y", "~/ws/projects/demo2/x and ~/ws/projects/demo-old/y"),
    # The current directory without a slash stays a path (under home).
    (f"checkout {CWD}", "checkout ~/ws/projects/demo"),
    # A quoted path is a literal: exact.
    (f"expected a symlink to '{CWD}/a b'", f"expected a symlink to '{CWD}/a b'"),
    (f'named "{HOME}/x"', f'named "{HOME}/x"'),
    # A space inside the current directory's name, or after it.
    (f"move {CWD}/a b away", "move a b away"),
    # URLs and a/b words are no paths.
    ("see https://example.org/home/u/x and file:///home/u/x",
     "see https://example.org/home/u/x and file:///home/u/x"),
    ("the a/b and home/u/x words", "the a/b and home/u/x words"),
    # The value of --moved-from is never relative to the current directory.
    (f"aikito sync --moved-from {CWD}/old", "aikito sync --moved-from ~/ws/projects/demo/old"),
])
def test_what_is_no_path_below_the_current_directory_is_never_mangled(
        message: str, shown: str) -> None:
    assert here(message) == shown


def test_a_name_that_is_not_utf8_keeps_its_raw_byte() -> None:
    raw = os.fsdecode(b"x\xff")
    assert here(f"cannot read {CWD}/{raw}.md") == f"cannot read {raw}.md"
    cwd = f"/tmp/{raw}"
    assert here(f"cannot read {cwd}/a.md", cwd=cwd, home=None) == "cannot read a.md"


def test_a_space_in_the_current_directory(tmp_path: Path) -> None:
    cwd = "/tmp/my dir"
    assert here(f"move {cwd}/x away; edit '{cwd}/y'", cwd=cwd, home=None) == \
        f"move x away; edit '{cwd}/y'"
    assert here(f"move {cwd}/ away", cwd=cwd, home=None) == "move ./ away"


def test_the_project_directory_named_where_the_command_ran(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in ``<ws>/projects/demo`` (no ``agent.toml``): the printed error names that
    directory ``./``, never an empty word; ``--json`` keeps it absolute."""
    project = Path(ws.root, "projects", "demo")
    project.mkdir(parents=True)
    monkeypatch.chdir(project)
    res = invoke("--workspace", ws.root, "sync", "project", "demo")
    assert res.exit_code == 4, res.output
    text = " ".join(res.stderr.split())
    assert "the directory ./ exists but has no agent.toml" in text, text
    assert "create agent.toml to register the project" in text
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json")
    message = json.loads(res.stdout)["error"]["message"]
    assert f"the directory {project}/ exists but has no agent.toml" in message
