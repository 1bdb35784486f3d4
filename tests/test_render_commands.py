"""[U2] a command of this tool that a message names pastes as one line: the wrap never
breaks inside it (it moves to the next line whole, and stands whole on a line of its own
when it is wider than the line, as a path does).  Exact lines at 60 and 100 columns, and a
sync conflict's ``aikito adopt`` taken from the printed line and run in ``sh`` where the
sync ran."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli
from aikito_mem.render.text import wrap
from tests.helpers.cli import VENV_BIN
from tests.helpers.home import child_env
from tests.helpers.workspace import WS

CONFLICT = ("  ! .agents/memory/style.md: found a regular file; expected a symlink to "
            "'/w/memory/style.md' (aikito adopt .agents/memory/style.md (replaces it with "
            "the link when it is an identical copy), or move it out of the way")


@pytest.mark.parametrize(("width", "lines"), [
    (60, ["  ! .agents/memory/style.md: found a regular file; expected",
          "      a symlink to '/w/memory/style.md'",
          "      (aikito adopt .agents/memory/style.md (replaces it",
          "      with the link when it is an identical copy), or move",
          "      it out of the way"]),
    (100, ["  ! .agents/memory/style.md: found a regular file; expected a symlink to "
           "'/w/memory/style.md'",
           "      (aikito adopt .agents/memory/style.md (replaces it with the link when it "
           "is an identical",
           "      copy), or move it out of the way"]),
])
def test_a_wrap_never_breaks_a_command_of_this_tool(width: int, lines: list[str]) -> None:
    """At 60 columns the words alone would break after ``(aikito``: the command moves to
    the next line whole."""
    assert wrap(CONFLICT, width) == lines


def test_a_command_wider_than_the_line_stands_whole_on_its_own() -> None:
    command = ("aikito --workspace ~/a/long/workspace/path sync --moved-from "
               "'~/an old/base/of/the/workspace/that/moved'")
    assert wrap(f"aikito: if it moved, point aikito at it with: {command} (relinks)", 60,
                2) == ["aikito: if it moved, point aikito at it with:",
                       f"  {command}", "  (relinks)"]


def test_two_quoted_words_never_make_one_quoted_path() -> None:
    """The closing quote of ``'..'`` and the opening quote of ``'.'`` hold prose with a
    ``/`` between them, not a quoted path: it wraps as prose, within the width ([U2])."""
    text = ("aikito: agent.toml: memory[0] = '../x.md' is not a valid reference: it has a "
            "'..' component; expected a clean relative POSIX path below the workspace "
            "memory/ directory (no empty, '.' or '..' component) — fix or remove this entry")
    lines = wrap(text, 60, 2)
    assert all(len(line) <= 60 for line in lines), lines
    assert " ".join(line.strip() for line in lines) == text
    # A quoted path is still kept whole, wherever it stands.
    assert wrap("x " * 25 + "'/a b/c d'", 40)[-1].endswith("'/a b/c d'")


def test_prose_and_other_words_still_wrap_anywhere() -> None:
    """Only the command of this tool is kept whole: ``aikito`` as a word of prose (``point
    aikito at it``) is not a command."""
    text = "point aikito at it with the workspace, and the aikito links follow it there"
    assert wrap(text, 30) == ["point aikito at it with the", "    workspace, and the aikito",
                              "    links follow it there"]


@pytest.mark.parametrize("columns", ["60", "100"])
def test_a_sync_conflicts_adopt_command_pastes_as_printed(
        home: str, monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    """A copy of a listed memory file in a checkout deep enough that the remedy wraps:
    the ``aikito adopt`` it names is whole on one printed line; taken from it and run in
    ``sh`` in the checkout, it replaces the copy by the link."""
    ws = WS(home)
    ws.add_file("style.md", "s\n")
    co = ws.checkout("clients/acme/the-project-checkout")
    ws.write_config("demo", memory=["style.md"], paths=[co])
    os.makedirs(ws.runtime(co))
    Path(ws.runtime(co, "style.md")).write_text("s\n")
    monkeypatch.setenv("AIKITO_DIR", ws.root)
    monkeypatch.chdir(co)
    res = CliRunner().invoke(cli, ["sync", "project", "demo"], catch_exceptions=False,
                             env={"COLUMNS": columns})
    assert res.exit_code == 1, res.output
    [line] = [line for line in res.stdout.splitlines() if "aikito adopt" in line]
    command = line.split("aikito adopt", 1)[1].split(" (", 1)[0]
    assert command == " .agents/memory/style.md"
    env = child_env(home, PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
                    AIKITO_DIR=ws.root)
    pasted = subprocess.run(["sh", "-c", f"aikito adopt{command}"], cwd=co, env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert os.readlink(ws.runtime(co, "style.md")) == ws.memory_path("style.md")
