"""[U2] ``aikito doctor``'s remedies paste where the command ran: every path a remedy
names relative to the current directory when below it, else ``~/``, else absolute (a
literal that must stay absolute, or be found in a file, kept exactly); every remedy on
a line of its own, indented four spaces, wrapped with a hanging indent, and each command
it names whole on a line of its own at the hanging indent, never wrapped.  Exact text,
from inside a checkout, from its parent, from the home directory and from outside it —
and each remedy pasted into a real shell."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from tests.helpers.cli import VENV_BIN
from tests.helpers.gitrepo import init_repo, needs_git
from tests.helpers.home import child_env
from tests.helpers.workspace import WS

pytestmark = needs_git


def doctor(*args: str, columns: str = "100") -> Result:
    return CliRunner().invoke(cli, ["doctor", *args], catch_exceptions=False,
                              env={"COLUMNS": columns})


def paste(command: str, cwd: str, home: str) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into a shell in ``cwd``: ``aikito`` on PATH, ``HOME`` ``home``."""
    env = child_env(home, PATH=f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["sh", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture
def world(home: str, monkeypatch: pytest.MonkeyPatch) -> tuple[WS, str]:
    """A workspace at ``~/ws`` (the pointer's default: AIKITO_DIR) whose project links
    memory into the git checkout ``~/co/repo``, which git does not ignore yet."""
    ws = WS(home)
    ws.add_file("style.md", "s\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    ws.write_config("demo", memory=["style.md"], paths=[co])
    monkeypatch.setenv("AIKITO_DIR", ws.root)
    return ws, co


def _git_lines(co: str, exclude: str) -> list[str]:
    return [
        f"warning  git.ignore        checkout 1 ({co}): git does not ignore .agents/memory/ and "
        ".agents/skills/ — aikito's links there (absolute paths of this machine) show up in git "
        "status and can be committed",
        f"    remedy: to add /.agents/memory/ and /.agents/skills/ to {exclude}, run:",
        "        aikito doctor --fix",
        "    or:",
        f"        printf '%s\\n' /.agents/memory/ >> {exclude}",
        f"        printf '%s\\n' /.agents/skills/ >> {exclude}",
    ]


@pytest.mark.parametrize(("where", "exclude"), [
    ("co/repo", ".git/info/exclude"),
    ("co", "repo/.git/info/exclude"),
    ("", "co/repo/.git/info/exclude"),
    ("ws", "~/co/repo/.git/info/exclude"),
])
def test_the_exclude_remedy_names_the_file_where_doctor_ran(
        world: tuple[WS, str], home: str, monkeypatch: pytest.MonkeyPatch, where: str,
        exclude: str) -> None:
    """In the checkout ``.git/info/exclude``, in its parent ``repo/.git/info/exclude``,
    in the home directory ``co/repo/…``, elsewhere under it ``~/co/repo/…``; and the
    ``printf`` lines, pasted there as printed, are the fix (doctor then says ok)."""
    ws, co = world
    cwd = os.path.join(home, where) if where else home
    monkeypatch.chdir(cwd)
    res = doctor(columns="1000")
    assert res.exit_code == 0
    assert res.stdout.splitlines() == [
        f"workspace {ws.root} (AIKITO_DIR)", *_git_lines(co, exclude),
        "doctor: 4 ok, 1 warning, 0 errors"]
    for command in res.stdout.splitlines()[5:7]:  # the ``printf`` lines, pasted in turn
        assert command.startswith("        printf ")
        pasted = paste(command, cwd, home)
        assert pasted.returncode == 0, pasted.stderr
    assert Path(co, ".git", "info", "exclude").read_text().endswith(
        "/.agents/memory/\n/.agents/skills/\n")
    again = doctor()
    assert "warning  git.ignore" not in again.stdout
    assert again.stdout.splitlines()[-1] == "doctor: 5 ok, 0 warnings, 0 errors"


@pytest.mark.parametrize(("columns", "short"), [
    ("60", ["    remedy: fix or remove that entry of", "        ~/ws/memory/MEMORY.md"]),
    ("100", ["    remedy: fix or remove that entry of ~/ws/memory/MEMORY.md"]),
    ("1000", ["    remedy: fix or remove that entry of ~/ws/memory/MEMORY.md"]),
])
def test_every_remedy_of_a_report_has_one_layout(
        world: tuple[WS, str], monkeypatch: pytest.MonkeyPatch, columns: str,
        short: list[str]) -> None:
    """[U2]: every remedy stands on a line of its own, indented four spaces, its further
    lines hanging four deeper — a short one (that would fit beside its check) as a long
    one, at every width; every line within the width but a word wider than it."""
    ws, co = world
    Path(ws.root, "memory", "MEMORY.md").write_text("[gone](gone.md)\n")
    monkeypatch.chdir(co)
    lines = doctor(columns=columns).stdout.splitlines()
    starts = [line for line in lines if "remedy:" in line]
    assert [line[:12] for line in starts] == ["    remedy: "] * 2
    at = lines.index(short[0])
    assert lines[at:at + len(short)] == short
    assert lines[at + len(short)].startswith("warning  git.ignore ")  # the next check
    width = int(columns)
    commands = {"        aikito doctor --fix",
                "        printf '%s\\n' /.agents/memory/ >> .git/info/exclude",
                "        printf '%s\\n' /.agents/skills/ >> .git/info/exclude"}
    assert commands <= set(lines)  # each command whole, on its own line
    for line in lines:
        assert len(line) <= width or len(line.split()) == 1 or line in commands, line


#: The exclude lines' commands, each short enough for a narrow terminal ([U2]).
_PRINTF = ["printf '%s\\n' /.agents/memory/ >> .git/info/exclude",
         "printf '%s\\n' /.agents/skills/ >> .git/info/exclude"]


@pytest.mark.parametrize(("columns", "remedy"), [
    ("60", ["    remedy: to add /.agents/memory/ and /.agents/skills/ to",
            "        .git/info/exclude, run:"]),
    ("100", ["    remedy: to add /.agents/memory/ and /.agents/skills/ to .git/info/exclude, "
             "run:"]),
])
def test_a_long_remedy_wraps_its_words_and_prints_its_commands_whole(
        world: tuple[WS, str], home: str, monkeypatch: pytest.MonkeyPatch, columns: str,
        remedy: list[str]) -> None:
    """[U2]: a remedy's words wider than the line hang four deeper than its ``remedy:``;
    each command it names stands whole on a line of its own at that indent — the
    each short enough for 60 columns — and, pasted as printed, the second alternative is
    the fix."""
    _, co = world
    monkeypatch.chdir(co)
    lines = doctor(columns=columns).stdout.splitlines()
    assert lines[lines.index(remedy[0]):-1] == [
        *remedy, "        aikito doctor --fix", "    or:", *(f"        {e}" for e in _PRINTF)]
    for line in lines[-3:-1]:  # the second alternative's lines, pasted in turn
        pasted = paste(line, co, home)
        assert pasted.returncode == 0, pasted.stderr
    assert doctor().stdout.splitlines()[-1] == "doctor: 5 ok, 0 warnings, 0 errors"


def test_outside_the_home_directory_the_remedy_is_absolute(
        world: tuple[WS, str], monkeypatch: pytest.MonkeyPatch) -> None:
    _, co = world
    monkeypatch.chdir("/")
    monkeypatch.setenv("HOME", "/nonexistent-home")  # neither base holds the checkout
    res = doctor(columns="1000")
    exclude = f"{co}/.git/info/exclude"
    lines = res.stdout.splitlines()
    at = lines.index(f"    remedy: to add /.agents/memory/ and /.agents/skills/ to {exclude}, "
                     "run:")
    assert lines[at + 1:at + 5] == [
        "        aikito doctor --fix", "    or:",
        f"        printf '%s\\n' /.agents/memory/ >> {exclude}",
        f"        printf '%s\\n' /.agents/skills/ >> {exclude}"]


def test_the_doctor_fix_remedy_pasted_reaches_the_named_workspace(
        world: tuple[WS, str], home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``--workspace``, the ``aikito doctor --fix`` a remedy names carries it (as a
    path that works where it ran) and, pasted, makes the fix."""
    ws, co = world
    monkeypatch.delenv("AIKITO_DIR")
    monkeypatch.chdir(co)
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "doctor"], catch_exceptions=False,
                             env={"COLUMNS": "1000"})
    lines = res.stdout.splitlines()
    at = lines.index("    remedy: to add /.agents/memory/ and /.agents/skills/ to "
                     ".git/info/exclude, run:")
    assert lines[at + 1:at + 5] == ["        aikito --workspace ~/ws doctor --fix", "    or:",
                                    *(f"        {e}" for e in _PRINTF)]
    command = lines[at + 1]
    pasted = paste(command, co, home)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert Path(co, ".git", "info", "exclude").read_text().count("/.agents/memory/\n") == 1


def test_every_other_remedy_pastes_where_doctor_ran(
        world: tuple[WS, str], home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index entry to fix, the legacy notes to move, a refused checkout to remove, the
    relative ``--workspace`` to make absolute: each remedy as it reads from the
    workspace root (paths below it relative, the literals exact), and the commands work
    pasted there."""
    ws, co = world
    Path(ws.root, "memory", "MEMORY.md").write_text("[gone](gone.md)\n")
    os.makedirs(ws.notes_path("demo"))
    os.makedirs(ws.notes_path("demo", legacy=True))
    ws.write_config("demo", raw=f'memory = ["style.md"]\npaths = ["{co}", "~"]\n')
    monkeypatch.chdir(ws.root)
    res = CliRunner().invoke(cli, ["--workspace", ".", "doctor"], catch_exceptions=False,
                             env={"COLUMNS": "1000"})
    remedies = [line.strip() for line in res.stdout.splitlines() if "remedy:" in line]
    assert remedies == [
        f"remedy: pass an absolute path (--workspace '{ws.root}') or set "
        f"AIKITO_DIR='{ws.root}'",
        "remedy: move what you need from memory/demo/notes into projects/demo/memory/notes, "
        "then remove memory/demo/notes",
        f"remedy: remove '{home}' (checkout 2) from projects/demo/agent.toml",
        "remedy: fix or remove that entry of memory/MEMORY.md",
        "remedy: to add /.agents/memory/ and /.agents/skills/ to ~/co/repo/.git/info/exclude, "
        "run:",
    ]
    assert res.stdout.splitlines()[-5:-1] == [
        "        aikito --workspace . doctor --fix", "    or:",
        "        printf '%s\\n' /.agents/memory/ >> ~/co/repo/.git/info/exclude",
        "        printf '%s\\n' /.agents/skills/ >> ~/co/repo/.git/info/exclude"]
    absolute = remedies[0].split("(--workspace ", 1)[1].split(")", 1)[0]
    moved = paste(f"cd / && aikito --workspace {absolute} doctor --json >/dev/null",
                  ws.root, home)
    assert moved.returncode == 1, moved.stderr  # the same workspace from anywhere: its errors
    for path in ("memory/demo/notes", "projects/demo/memory/notes",
                 "projects/demo/agent.toml", "memory/MEMORY.md"):
        assert os.path.exists(os.path.join(ws.root, path)), path
