"""[U2] for ``aikito adopt`` and for error messages: every path a report or a remedy names
is written so that it works when pasted in the directory where the command ran — relative
to it when below it, else ``~/…``, else absolute — while ``--json`` and the error's own
attributes keep absolute paths.

A fresh home holds the workspace (``~/aikito``, made by ``aikito init``) and the checkout
(``~/code/web``); every command runs in process from the checkout, its parent, the home
directory or a directory outside the home, and every command it prints is pasted there and
run."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from aikito_mem.render.paths import Paths
from aikito_mem.render.text import Display, message_lines
from tests.helpers.cli import one_json


def aikito(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def paste(command: str) -> Result:
    """``command`` as a shell splits it (``~`` expanded), run where it was printed."""
    argv = [os.path.expanduser(word) for word in shlex.split(command)]
    assert argv[0] == "aikito"
    return aikito(*argv[1:])


@pytest.fixture
def web(home: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``~/aikito`` and project ``web`` with its checkout ``~/code/web`` (registered as
    ``~/code/web``), made as a user makes them, from the home directory."""
    h = Path(home)
    (h / "code" / "web").mkdir(parents=True)
    monkeypatch.chdir(h)
    assert aikito("init").exit_code == 0
    assert aikito("init", "project", "web", "code/web").exit_code == 0
    return h / "code" / "web"


def go(web: Path, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Change to the checkout, its parent, the home or a directory outside the home."""
    home = web.parent.parent
    place = {"checkout": web, "parent": web.parent, "home": home, "outside": tmp_path}[where]
    monkeypatch.chdir(place)


#: How each place names the checkout, and the workspace.
SHOWN = {"checkout": (".", "~/aikito"), "parent": ("web", "~/aikito"),
         "home": ("code/web", "aikito"), "outside": ("~/code/web", "~/aikito")}


def _in(co: str, rel: str) -> str:
    return rel if co == "." else f"{co}/{rel}"


@pytest.mark.parametrize("where", sorted(SHOWN))
def test_adopt_names_paths_as_pasted_where_it_ran(
        web: Path, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2]: the target, the checkout and the workspace copy as the place names them;
    the JSON document of the same adoption is absolute wherever it ran."""
    mem = web / ".agents" / "memory"
    mem.mkdir(parents=True)
    (mem / "notes.md").write_text("n\n")
    go(web, where, tmp_path, monkeypatch)
    co, ws = SHOWN[where]
    target = _in(co, ".agents/memory/notes.md")
    dest = f"{ws}/memory/notes.md"
    dry_json = one_json(aikito("adopt", os.path.expanduser(target), "--dry-run",
                               "--json").stdout)
    assert dry_json["target"] == str(mem / "notes.md")
    assert dry_json["destination"] == str(web.parent.parent / "aikito/memory/notes.md")
    assert dry_json["checkout"] == str(web)
    res = aikito("adopt", os.path.expanduser(target))
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [
        f"adopt {target} (project web, checkout {co})",
        f"  move: {target} -> {dest} (rename) [applied]",
        "  memory list: add 'notes.md' [applied]",
        f"  link: {target} -> {dest} [applied]",
        f"done: notes.md adopted; its content is at {dest}",
    ]
    assert Path(os.path.expanduser(dest)).read_text() == "n\n"  # the path it printed


@pytest.mark.parametrize("where", ["checkout", "home"])
def test_an_agent_skill_names_the_next_sync_and_pasted_it_links_the_rest(
        web: Path, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2] [N1]: ``.claude/skills/NAME`` with a claude-code registry file: adopt links
    back only that target and prints the sync that links ``.agents/skills/NAME``; pasted
    where adopt ran, it does."""
    assert aikito("agents", "add", "claude-code").exit_code == 0
    skill = web / ".claude" / "skills" / "mine"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("s\n")
    go(web, where, tmp_path, monkeypatch)
    co, ws = SHOWN[where]
    target = _in(co, ".claude/skills/mine")
    res = aikito("adopt", target)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines == [
        f"adopt {target} (project web, checkout {co})",
        f"  move: {target} -> {ws}/skills/mine (rename) [applied]",
        "  skills list: add 'mine' [applied]",
        f"  link: {target} -> {ws}/skills/mine [applied]",
        "  not linked by adopt: .agents/skills/mine (the skill's other targets here); the "
        "next sync links them:",
        "    aikito sync project web",
        f"done: mine adopted; its content is at {ws}/skills/mine",
    ]
    assert paste(lines[5].strip()).exit_code == 0
    assert os.readlink(web / ".agents" / "skills" / "mine") == str(
        web.parent.parent / "aikito" / "skills" / "mine")


def test_an_instruction_file_and_the_other_conflicts_are_named_from_the_parent(
        web: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2] [L5]: an instruction target, and the checkout's other conflicts, as the parent
    directory names them (a quoted link literal stays exact)."""
    home = web.parent.parent
    (home / "aikito" / "memory" / "g.md").write_text("ours\n")
    config = home / "aikito" / "projects" / "web" / "agent.toml"
    config.write_text(config.read_text().replace("memory = []", 'memory = ["g.md"]'))
    (web / ".agents" / "memory").mkdir(parents=True)
    (web / ".agents" / "memory" / "g.md").write_text("theirs\n")
    (web / ".agents" / "memory" / "n.md").write_text("n\n")
    (web / "AGENTS.md").write_text("# web\n")
    go(web, "parent", tmp_path, monkeypatch)
    res = aikito("adopt", "web/AGENTS.md", "--dry-run")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines() == [
        "adopt web/AGENTS.md (project web, checkout web)",
        "  would move: web/AGENTS.md -> ~/aikito/projects/web/AGENTS.md (rename) [planned]",
        "  link: web/AGENTS.md -> ~/aikito/projects/web/AGENTS.md [planned]",
        "dry run: nothing was written",
    ]
    res = aikito("adopt", "web/.agents/memory/n.md", "--dry-run")
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[4:] == [
        "note: the checkout has 1 other conflict, left for `aikito sync project`:",
        "  ! web/.agents/memory/g.md: found a regular file; expected a symlink to "
        f"'{home}/aikito/memory/g.md'",
        "dry run: nothing was written",
    ]


def test_a_refusal_names_both_copies_as_pasted_from_home(
        web: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2]: a differing copy is refused with the workspace copy and the target as the
    home directory names them, on stdout and in the error on stderr; the error of the
    JSON document keeps them absolute."""
    home = web.parent.parent
    (home / "aikito" / "memory" / "g.md").write_text("ours\n")
    (web / ".agents" / "memory").mkdir(parents=True)
    (web / ".agents" / "memory" / "g.md").write_text("theirs\n")
    go(web, "home", tmp_path, monkeypatch)
    res = aikito("adopt", "code/web/.agents/memory/g.md")
    assert res.exit_code == 1
    assert res.stdout.splitlines()[:2] == ["how TARGET differs from aikito/memory/g.md:",
        "  content differs (7 bytes in the checkout, 5 in the workspace)"]
    t = "code/web/.agents/memory/g.md"
    assert res.stderr == (
        f"aikito: aikito/memory/g.md already exists and differs from {t}: content differs "
        f"(7 bytes in the checkout, 5 in the workspace) — adopt replaces {t} only by "
        "identical content; merge what you need into "
        f"aikito/memory/g.md, then remove {t} (or run adopt again once they are "
        "identical)\n")
    doc = one_json(aikito("adopt", t, "--json").stdout)
    assert doc["error"]["message"].startswith(
        f"{home}/aikito/memory/g.md already exists and differs from {web}/.agents/memory")
    assert doc["error"]["path"] == f"{home}/aikito/memory/g.md"


def test_a_missing_workspace_names_commands_that_work_where_pasted(
        web: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2] [L4]: the remedy of a missing workspace, from the home directory: ``aikito init
    aikito`` (pasted, it creates the workspace again) and ``--moved-from ~/aikito`` (never
    relative: the option takes an absolute path); the quoted paths the message reports
    and ``--json`` stay absolute."""
    home = web.parent.parent
    (home / "aikito").rename(home / "aikito-new")
    go(web, "home", tmp_path, monkeypatch)
    res = aikito("sync", "project", "web")
    assert res.exit_code == 4
    pointer = f"{home}/.config/aikito/workspace"
    assert res.stderr == (
        f"aikito: workspace '{home}/aikito' (from pointer file '{pointer}') does not exist; "
        "expected a directory containing projects/ — if the workspace moved, point aikito "
        "at it with: aikito init NEWPATH (then aikito sync --moved-from ~/aikito relinks "
        "the checkouts); to start a new one here: aikito init aikito; or edit the pointer "
        f"file '{pointer}' to name an existing workspace, set AIKITO_DIR, or pass "
        "--workspace\n")
    doc = one_json(aikito("sync", "project", "web", "--json").stdout)
    assert f"aikito init {home}/aikito;" in doc["error"]["message"]
    assert aikito("init", "aikito", "--dry-run").stdout.splitlines()[0] == \
        f"Would initialise workspace {home}/aikito"


def test_a_moved_workspace_is_relinked_by_the_command_printed_in_home(
        web: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2] [L4]: after ``mv ~/aikito ~/ws`` and ``aikito init ws``, the sync run from the
    home names ``aikito sync --moved-from ~/aikito`` — never ``aikito`` alone, which the
    option refuses — and pasted there it relinks the checkout."""
    home = web.parent.parent
    (web / ".agents" / "memory").mkdir(parents=True)
    (web / ".agents" / "memory" / "n.md").write_text("n\n")
    go(web, "home", tmp_path, monkeypatch)
    assert aikito("adopt", "code/web/.agents/memory/n.md").exit_code == 0
    (home / "aikito").rename(home / "ws")
    init = aikito("init", "ws")
    assert ("relink the checkouts with: aikito sync --moved-from ~/aikito"
            in init.stdout.replace("\n", " "))
    res = aikito("sync", "project", "web")
    assert res.exit_code == 1
    command = res.stdout.split("if it moved to ws: ", 1)[1].split(" (", 1)[0]
    assert command == "aikito sync --moved-from ~/aikito"
    assert paste(command).exit_code == 0
    assert os.readlink(web / ".agents" / "memory" / "n.md") == f"{home}/ws/memory/n.md"


def test_the_moved_from_value_is_never_relative() -> None:
    """[U2] [L4]: ``--moved-from`` takes an absolute path: below the current directory it
    is written ``~/…`` (the current directory in the home) or absolute, never relative;
    every other path below it is relative."""
    in_home = Paths(None, cwd="/h/code", home="/h")
    assert in_home.remedy("aikito sync --moved-from /h/code/old; edit /h/code/a.toml") == \
        "aikito sync --moved-from ~/code/old; edit a.toml"
    assert Paths(None, cwd="/h", home="/h").remedy("aikito sync --moved-from /h/old") == \
        "aikito sync --moved-from ~/old"
    outside = Paths(None, cwd="/o", home="/h")
    assert outside.remedy("aikito sync --moved-from /o/old x /o/y") == \
        "aikito sync --moved-from /o/old x y"


def test_an_error_message_is_pasteable_only_as_printed() -> None:
    """[U2]: ``message_lines`` writes the paths of a message where the command ran, and its
    listed items alike; without a current directory or home it is the message as is."""
    message = "cannot create /h/w/p/agent.toml — edit /h/w/layout.toml, or run aikito init /h/x"
    shown = Display(cwd="/h/w", home="/h")
    assert message_lines(message, shown) == (
        "aikito: cannot create p/agent.toml — edit layout.toml, or run aikito init ~/x",)
    assert message_lines(message + "\n  - /h/w/a", shown, ("/h/w/a",))[1] == "  - a"
    assert message_lines(message, Display()) == (f"aikito: {message}",)
