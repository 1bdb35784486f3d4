"""Habits of the reference tool, and output a person can read ([U1]–[U4]): the command
forms its users type, quiet runs, the pre-commit hook, and words that say what happened.

Each test drives the command line (``CliRunner``, or a real process where git or a shell
is involved) and asserts exact lines or exact documents."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from aikito_mem.cli import cli
from tests.helpers.cli import VENV_BIN, one_json
from tests.helpers.home import child_env
from tests.helpers.segments import SegWorld
from tests.helpers.snapshots import snapshot
from tests.helpers.width import whole
from tests.helpers.workspace import WS

REPO = Path(__file__).resolve().parent.parent


def run(ws: WS | None, *args: str, columns: str | None = None) -> Result:
    argv = ["--workspace", ws.root, *args] if ws is not None else list(args)
    env = {"COLUMNS": columns} if columns is not None else None
    return CliRunner().invoke(cli, argv, catch_exceptions=False, env=env)


def git(cwd: str | Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True, timeout=60,
                          env=child_env(None, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                                        GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
                          ).stdout


@pytest.fixture
def demo(ws: WS) -> WS:
    """Project demo: two references, one checkout ``co`` and one offline."""
    ws.add_file("style.md", "s\n")
    ws.add_file("team/conventions.md", "c\n")
    ws.write_config("demo", memory=["style.md", "team/conventions.md"],
                    paths=[ws.checkout("co"), f"{ws.base}/offline"])
    return ws


def co(ws: WS) -> str:
    return f"{ws.checkouts_dir}/co"


# ------------------------------------------------------------------------- [U1] forms


@pytest.mark.parametrize("options", [
    ("--dry-run",), ("--check",), ("--dry-run", "-v"), ("--check", "--verbose"),
    ("-q", "--dry-run"), ("--lock-timeout", "5"), (),
])
def test_options_before_project_give_the_same_document(demo: WS, options: tuple[str, ...]
                                                       ) -> None:
    """[U1]: ``aikito sync --dry-run project demo`` is ``aikito sync project demo
    --dry-run`` — the same JSON document, the same exit code (a real run twice: the
    second finds it done, in both orders)."""
    first = run(demo, "sync", "--json", *options, "project", "demo")
    if "--dry-run" not in options and "--check" not in options:
        # A real run: compare the second runs (each finds everything done).
        first = run(demo, "sync", "--json", *options, "project", "demo")
    second = run(demo, "sync", "project", "demo", "--json", *options)
    assert first.exit_code == second.exit_code == one_json(first.stdout)["exit_code"]
    assert one_json(first.stdout) == one_json(second.stdout)


def test_options_before_project_in_text(demo: WS) -> None:
    before = run(demo, "sync", "--dry-run", "-v", "project", "demo")
    after = run(demo, "sync", "project", "demo", "--dry-run", "-v")
    assert (before.exit_code, before.stdout) == (after.exit_code, after.stdout)
    assert "  + .agents/memory/style.md -> memory/style.md" in before.stdout.splitlines()


@pytest.mark.parametrize("argv", [
    ("sync", "--force", "project", "demo"),
    ("sync", "project", "demo", "--force"),
    ("sync", "project", "--force", "demo"),
    ("sync", "--force"),
    ("sync", "--dry-run", "--force", "project", "demo"),
])
def test_force_anywhere_in_sync_is_a_usage_error(demo: WS, argv: tuple[str, ...]) -> None:
    """[U1]: exit 2, nothing written, saying the engine never overwrites and naming
    ``aikito adopt`` and ``aikito clean``."""
    target = f"{co(demo)}/.agents/memory/style.md"
    os.makedirs(os.path.dirname(target))
    Path(target).write_text("the user's own\n")
    before = snapshot(demo.base)
    res = run(demo, *argv)
    assert res.exit_code == 2
    assert res.stdout == ""
    error = " ".join(res.stderr.split())
    assert "this engine never overwrites" in error
    assert "aikito adopt TARGET" in error and "aikito clean project NAME" in error
    assert snapshot(demo.base) == before


def test_init_workspace_is_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U1]: ``aikito init workspace [PATH]`` is ``aikito init [PATH]`` — never a directory
    named ``workspace`` (write ``./workspace`` for that)."""
    monkeypatch.chdir(tmp_path)
    target = str(tmp_path / "ws")
    spelled = run(None, "init", "workspace", target, "--dry-run", "--json")
    plain = run(None, "init", target, "--dry-run", "--json")
    assert spelled.exit_code == plain.exit_code == 0
    assert one_json(spelled.stdout) == one_json(plain.stdout)
    default = one_json(run(None, "init", "workspace", "--dry-run", "--json").stdout)
    assert default == one_json(run(None, "init", "--dry-run", "--json").stdout)
    assert default["workspace"] == f"{os.environ['HOME']}/aikito"
    assert run(None, "init", "workspace", target).exit_code == 0
    assert os.path.isdir(f"{target}/projects") and not os.path.exists("workspace")
    named = one_json(run(None, "init", "./workspace", "--dry-run", "--json").stdout)
    assert named["workspace"] == f"{os.path.realpath(tmp_path)}/workspace"


def _paths_of(ws: WS, name: str) -> list[str]:
    import tomllib

    with open(ws.config_path(name), "rb") as fh:
        paths: list[str] = tomllib.load(fh)["paths"]
    return paths


def test_init_project_inside_a_git_work_tree_registers_its_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U1]: ``aikito init project NAME`` in ``repo/src/deep`` registers ``repo``."""
    ws = WS(tmp_path)
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    git(repo, "init", "-q")
    monkeypatch.chdir(repo / "src" / "deep")
    res = run(ws, "init", "project", "api")
    assert res.exit_code == 0, res.output
    assert f"  checkout     {os.path.realpath(repo)}" in res.stdout.splitlines()
    assert _paths_of(ws, "api") == [os.path.realpath(repo)]
    assert res.stdout.splitlines()[-1] == "Next: aikito sync project api"
    # Outside any work tree: nothing registered, as before.
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    assert run(ws, "init", "project", "web").exit_code == 0
    assert _paths_of(ws, "web") == []


def test_init_project_never_registers_the_workspace_or_home_as_a_checkout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U1] with [H1]: the workspace is a git repository in practice — ``init project``
    run in it, or in a work tree holding it, or in a home directory under git, registers
    nothing."""
    ws = WS(tmp_path / "outer" / "h")
    git(ws.root, "init", "-q")
    monkeypatch.chdir(f"{ws.root}/memory")
    assert run(ws, "init", "project", "inside").exit_code == 0
    assert _paths_of(ws, "inside") == []
    git(tmp_path / "outer", "init", "-q")  # a work tree holding the workspace
    monkeypatch.chdir(tmp_path / "outer")
    assert run(ws, "init", "project", "above").exit_code == 0
    assert _paths_of(ws, "above") == []
    home = tmp_path / "home"
    (home / "sub").mkdir(parents=True)
    git(home, "init", "-q")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home / "sub")
    assert run(ws, "init", "project", "home").exit_code == 0
    assert _paths_of(ws, "home") == []


# --------------------------------------------------------------------- [U3] quiet runs


def test_an_undetected_agent_is_shown_only_with_verbose(tmp_path: Path) -> None:
    """[U3]: the SKIP of an instruction target whose agent is not installed is counted,
    and listed only with -v."""
    world = SegWorld(tmp_path)
    (world.home / ".claude").rmdir()  # claude-code not detected
    res = CliRunner().invoke(cli, ["--workspace", str(world.ws), "sync", "project", "demo",
                                   "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "agent not detected" not in res.stdout
    assert "instructions: 1 to create, 0 to unlink, 0 conflicts, 0 unchanged, 1 skipped" \
        in res.stdout.splitlines()
    verbose = CliRunner().invoke(cli, ["--workspace", str(world.ws), "sync", "project",
                                       "demo", "--dry-run", "-v"])
    assert [line for line in verbose.stdout.splitlines() if "agent not detected" in line] \
        == ["  ~ .claude/CLAUDE.md: skipped (agent not detected (claude-code): its directory "
            "does not exist)"]
    assert run_sync_twice_is_one_line(world)


def run_sync_twice_is_one_line(world: SegWorld) -> bool:
    argv = ["--workspace", str(world.ws), "sync", "project", "demo"]
    assert CliRunner().invoke(cli, argv).exit_code == 0
    again = CliRunner().invoke(cli, argv)
    return again.stdout.splitlines() == ["demo: in sync (1 checkout)"]


def test_a_workspace_in_sync_prints_a_line_per_project(ws: WS) -> None:
    """[U3]: ``aikito sync`` of three projects in sync: three lines and the total."""
    ws.add_file("a.md", "a")
    for name in ("alpha", "beta", "gamma"):
        ws.write_config(name, memory=["a.md"],
                        paths=[ws.checkout(name), f"{ws.base}/off-{name}"])
    assert run(ws, "sync").exit_code == 0
    res = run(ws, "sync")
    assert res.exit_code == 0
    assert res.stdout.splitlines() == [
        "alpha: in sync (2 checkouts, 1 offline)",
        "beta: in sync (2 checkouts, 1 offline)",
        "gamma: in sync (2 checkouts, 1 offline)",
        "sync: 3 projects: 3 in sync",
    ]
    # A dry run where two of three are in sync says so.
    os.unlink(ws.runtime(ws.checkout("beta"), "a.md"))
    dry = run(ws, "sync", "--dry-run")
    assert dry.stdout.splitlines()[-1] == "sync: 3 projects: 2 in sync, 1 planned"


def test_check_with_changes_ends_with_the_command_that_applies_them(
        demo: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U3]: exit 7, the last line names the command; pasted where it was printed, it
    applies the changes."""
    monkeypatch.chdir(co(demo))
    res = run(demo, "sync", "project", "demo", "--check")
    assert res.exit_code == 7
    last = res.stdout.splitlines()[-1]
    prefix = "dry run: changes pending, nothing was written — to apply: "
    assert last == f"{prefix}aikito --workspace {demo.root} sync project demo"
    assert paste(last.removeprefix(prefix)).exit_code == 0
    assert run(demo, "sync", "project", "demo", "--check").exit_code == 0
    # With PATH and --no-register, the command keeps them.
    other = demo.checkout("other")
    monkeypatch.chdir(demo.base)
    explicit = run(demo, "sync", "project", "demo", other, "--check", "--no-register")
    assert explicit.exit_code == 7
    command = explicit.stdout.splitlines()[-1].removeprefix(prefix)
    # Paths below the current directory are relative, as pasted here.
    assert command == (f"aikito --workspace {os.path.relpath(demo.root)} sync project demo "
                       f"{os.path.relpath(other)} --no-register")
    assert paste(command).exit_code == 0
    assert os.path.islink(demo.runtime(other, "style.md"))
    assert other not in Path(demo.config_path("demo")).read_text()  # not registered


def paste(command: str) -> Result:
    """``command`` as a shell splits it, run in the current directory."""
    argv = shlex.split(command)
    assert argv[0] == "aikito"
    return CliRunner().invoke(cli, argv[1:], catch_exceptions=False)


@pytest.mark.parametrize(("state", "code"), [
    ("in sync", 0), ("pending", 7), ("blocked", 1), ("config error", 4)])
def test_status_uses_the_codes_of_sync_check(demo: WS, state: str, code: int) -> None:
    """[U3]: ``aikito status`` exits as ``aikito sync --check`` does."""
    assert run(demo, "sync", "project", "demo").exit_code == 0
    if state == "pending":
        os.unlink(demo.runtime(co(demo), "style.md"))
    elif state == "blocked":
        os.unlink(demo.runtime(co(demo), "style.md"))
        Path(demo.runtime(co(demo), "style.md")).write_text("mine\n")
    elif state == "config error":
        demo.write_config("broken", raw="memory = [\n")
    assert run(demo, "status").exit_code == code
    assert run(demo, "status", "--json").exit_code == code
    assert run(demo, "sync", "--check").exit_code == code


# ---------------------------------------------------------------- [U4] pre-commit hook


def _hook_entry() -> str:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    entry: str = hook["entry"]
    return entry


def _install_hook(repo: Path) -> None:
    """A pre-commit hook that runs the published entry, as pre-commit does: at the root
    of the work tree, with the package's console script on PATH."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {_hook_entry()}\n")
    hook.chmod(0o755)


def _commit(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (repo / "file.txt").write_text(f"{len(os.listdir(repo))}\n")
    subprocess.run(["git", "-C", str(repo), "add", "file.txt"], check=True, env=env,
                   capture_output=True, timeout=60)
    return subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "x"], env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_pre_commit_hook_checks_only_the_checkout_being_committed(ws: WS) -> None:
    """[U4], for real: two checkouts of one project, each a git repository; the other
    one being out of sync never fails this one's commit; this one being out of sync does
    (exit 7, the command that syncs it last)."""
    ws.add_file("style.md", "s\n")
    here, other = Path(ws.checkout("here")), Path(ws.checkout("other"))
    ws.write_config("demo", memory=["style.md"], paths=[str(here), str(other)])
    for repo in (here, other):
        git(repo, "init", "-q")
        _install_hook(repo)
    env = child_env(None, AIKITO_DIR=ws.root, PATH=f"{VENV_BIN}:{os.environ['PATH']}",
                    GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                    GIT_COMMITTER_EMAIL="t@t")
    sync = subprocess.run([str(VENV_BIN / "aikito"), "sync", "project", "demo",
                           str(here)], env=env, capture_output=True, timeout=120)
    assert sync.returncode == 0
    assert not os.path.lexists(ws.runtime(str(other), "style.md"))  # other: out of sync
    done = _commit(here, env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "demo: in sync (1 checkout)\n"  # git shows a hook's output there
    os.unlink(ws.runtime(str(here), "style.md"))
    refused = _commit(here, env)
    assert refused.returncode != 0
    assert refused.stderr.splitlines()[-1] == (
        "dry run: changes pending, nothing was written — to apply: aikito sync project demo .")
    assert not os.path.lexists(ws.runtime(str(here), "style.md"))  # --check wrote nothing


@pytest.mark.parametrize("setting", ["none configured", "configured one missing"])
def test_the_pre_commit_hook_passes_on_a_machine_without_a_workspace(
        tmp_path: Path, setting: str) -> None:
    """[U4]: a teammate without aikito commits: exit 0, one line of notice."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    _install_hook(repo)
    extra = {"AIKITO_DIR": str(tmp_path / "gone")} if setting != "none configured" else {}
    env = child_env(None, PATH=f"{VENV_BIN}:{os.environ['PATH']}", GIT_AUTHOR_NAME="t",
                    GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                    GIT_COMMITTER_EMAIL="t@t", **extra)
    done = _commit(repo, env)
    assert done.returncode == 0, done.stderr
    missing = "~/aikito" if setting == "none configured" else str(tmp_path / "gone")
    assert done.stderr == (f"notice: no aikito workspace on this machine ({missing} is "
                           "missing): nothing to check\n")


def test_skip_without_workspace_keeps_every_other_error(ws: WS, tmp_path: Path) -> None:
    """Only "no workspace" is skipped: a broken one, or a project that is not found,
    still fails (exit 4) — and a workspace without projects/ is not a workspace."""
    res = run(ws, "sync", "project", "nope", "--check", "--skip-without-workspace")
    assert res.exit_code == 4 and "project 'nope' not found" in res.stderr
    os.makedirs(tmp_path / "empty")
    empty = CliRunner().invoke(cli, ["--workspace", str(tmp_path / "empty"), "sync",
                                     "project", "--check", "--skip-without-workspace",
                                     "--json"])
    doc = one_json(empty.stdout)
    assert (empty.exit_code, doc["outcome"], doc["error"]) == (0, "unchanged", None)
    assert [f["code"] for f in doc["findings"]] == ["sync.no_workspace"]
    without = CliRunner().invoke(cli, ["--workspace", str(tmp_path / "empty"), "sync",
                                       "project", "--check"])
    assert without.exit_code == 4
    # A workspace configured wrongly (not missing) is an error the hook reports.
    relative = CliRunner().invoke(cli, ["sync", "project", "--check",
                                        "--skip-without-workspace"],
                                  env={"AIKITO_DIR": "relative/ws"})
    assert relative.exit_code == 4 and "is not an absolute path" in relative.stderr


def test_the_pre_commit_hook_passes_where_no_project_lists_the_checkout(ws: WS) -> None:
    """[U4]: a teammate whose workspace has no project listing this repository commits:
    exit 0, one line of notice naming the workspace (as ``~/``: it is below HOME)."""
    ws.write_config("other", memory=[])
    repo = ws.base / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    _install_hook(repo)
    env = child_env(ws.base, AIKITO_DIR=ws.root, PATH=f"{VENV_BIN}:{os.environ['PATH']}",
                    GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                    GIT_COMMITTER_EMAIL="t@t")
    before = snapshot(ws.root)
    done = _commit(repo, env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("notice: no project of the workspace ~/ws has this checkout: "
                           "nothing to check\n")
    assert snapshot(ws.root) == before  # nothing registered, nothing written


def test_skip_without_workspace_where_no_project_lists_the_checkout(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U4] with --json: one document, outcome unchanged, exit 0, one sync.no_project
    finding; without the flag the same run is the configuration error it always was."""
    ws.write_config("other", memory=[])
    here = ws.base / "repo"
    here.mkdir()
    monkeypatch.chdir(here)
    argv = ["sync", "project", ".", ".", "--check", "--no-register"]
    res = run(ws, *argv, "--skip-without-workspace", "--json")
    doc = one_json(res.stdout)
    assert (res.exit_code, doc["outcome"], doc["exit_code"], doc["error"]) == (
        0, "unchanged", 0, None)
    assert (doc["project"], doc["workspace"]) == (None, ws.root)
    assert doc["findings"] == [{
        "code": "sync.no_project", "severity": "info",
        "message": f"no project of the workspace {ws.root} has this checkout: nothing "
                   "to check", "path": str(here)}]
    text = run(ws, *argv, "--skip-without-workspace", columns="200")
    assert (text.exit_code, text.stdout, text.stderr) == (
        0, f"notice: no project of the workspace {ws.root} has this checkout: nothing "
           "to check\n", "")
    without = run(ws, *argv, columns="1000")
    assert (without.exit_code, without.stdout) == (4, "")
    assert without.stderr == (
        f"aikito: no project of workspace {ws.root} has an active checkout containing "
        f"{here} — name the project: aikito sync project NAME\n")
    doc = one_json(run(ws, *argv, "--json").stdout)
    assert (doc["outcome"], doc["exit_code"], doc["error"]["code"]) == (
        "config_error", 4, "config.project_not_found")


def test_skip_without_workspace_notices_are_absolute_in_json(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U4] [U2] §9: the notice's path is written where the command ran in text only;
    ``--json`` carries it absolute, in the message as in ``path``."""
    monkeypatch.chdir(ws.base)
    gone = str(ws.base / "gone")
    argv = ["--workspace", gone, "sync", "project", "--check", "--skip-without-workspace"]
    doc = one_json(CliRunner().invoke(cli, [*argv, "--json"]).stdout)
    assert [(f["message"], f["path"]) for f in doc["findings"]] == [(
        f"no aikito workspace on this machine ({gone} is missing): nothing to check",
        gone)]
    text = CliRunner().invoke(cli, argv, env={"COLUMNS": "200"})
    assert text.stdout == ("notice: no aikito workspace on this machine (gone is "
                           "missing): nothing to check\n")
    ws.write_config("other", memory=[])
    argv = ["sync", "project", ".", ".", "--check", "--no-register",
            "--skip-without-workspace"]
    doc = one_json(run(ws, *argv, "--json").stdout)
    assert [f["message"] for f in doc["findings"]] == [
        f"no project of the workspace {ws.root} has this checkout: nothing to check"]
    assert run(ws, *argv, columns="200").stdout == (
        "notice: no project of the workspace ws has this checkout: nothing to check\n")


def test_skip_without_workspace_never_skips_what_might_list_the_checkout(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project whose agent.toml does not load might be the one that lists this
    checkout: that is exit 4 even with the flag; so is a directory two projects hold,
    and a project named that does not hold it is checked as ever."""
    here = Path(ws.checkout("repo"))
    monkeypatch.chdir(here)
    argv = ["sync", "project", ".", ".", "--check", "--skip-without-workspace"]
    ws.write_config("broken", raw="memory = [\n")
    res = run(ws, *argv, columns="300")
    assert res.exit_code == 4
    assert "(projects with a broken agent.toml: broken)" in res.stderr
    os.unlink(f"{ws.root}/projects/broken/agent.toml")
    ws.write_config("a", memory=[], paths=[str(here)])
    ws.write_config("b", memory=[], paths=[str(here)])
    res = run(ws, *argv, columns="300")
    assert res.exit_code == 4 and "inside checkouts of several projects" in res.stderr


# ----------------------------------------------------------- words that say what happened


def test_a_missing_explicit_checkout_does_not_exist(demo: WS) -> None:
    res = run(demo, "sync", "project", "demo", "/nonexistent/dir")
    assert res.exit_code == 4
    assert res.stderr.startswith("aikito: checkout /nonexistent/dir does not exist; expected")


def test_other_segments_in_sync_are_not_said_to_be_applied(tmp_path: Path) -> None:
    world = SegWorld(tmp_path)
    argv = ["--workspace", str(world.ws), "sync", "project", "demo"]
    assert CliRunner().invoke(cli, argv).exit_code == 0
    os.unlink(f"{world.co}/.agents/memory/a.md")
    Path(f"{world.co}/.agents/memory/a.md").write_text("mine\n")
    dry = CliRunner().invoke(cli, [*argv, "--dry-run"])
    assert dry.exit_code == 1
    assert "the other segments are already in sync" in dry.stderr
    real = CliRunner().invoke(cli, argv)
    assert real.exit_code == 1
    assert "the other segments were already in sync" in real.stderr
    assert "were applied" not in real.stderr


def test_a_stale_apply_says_which_source_needs_a_link(demo: WS, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    assert run(demo, "sync", "project", "demo", "--dry-run", "--out", str(plan)
               ).exit_code == 0
    target = demo.runtime(co(demo), "style.md")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.symlink(demo.memory_path("style.md"), target)  # done meanwhile, by hand
    res = run(demo, "apply", str(plan))
    assert res.exit_code == 3
    assert (f"source {demo.memory_path('style.md')} needs no link created now, but the "
            "plan creates one (the plan checks its identity)") in res.stderr
    assert "must be checked by" not in res.stderr


def test_a_preserved_foreign_file_names_adopt_and_the_command_works(
        demo: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """The warning of a file aikito did not create under .agents/memory names ``aikito
    adopt``; pasted in the checkout, where the sync ran, it adopts the file."""
    assert run(demo, "sync", "project", "demo").exit_code == 0
    Path(demo.runtime(co(demo), "decisions.md")).write_text("ours\n")
    monkeypatch.chdir(co(demo))
    res = run(demo, "sync", "project", "demo")
    warning = res.stdout.splitlines()[-1]
    # The workspace was named with --workspace: the command names it too.
    assert warning == (
        "warning: preserved .agents/memory/decisions.md: a regular file that aikito did not "
        f"create; it is left untouched — to share it with every checkout: aikito --workspace "
        f"{demo.root} adopt .agents/memory/decisions.md (moves it into the workspace and "
        "links it back); else remove it yourself if it is not needed")
    command = warning.split("every checkout: ", 1)[1].split(" (", 1)[0]
    adopted = paste(command)
    assert adopted.exit_code == 0, adopted.output
    assert os.readlink(demo.runtime(co(demo), "decisions.md")) == \
        demo.memory_path("decisions.md")


def test_every_text_warning_is_a_json_finding(demo: WS) -> None:
    """[U3]: the warnings of a text report are the document's warning findings."""
    assert run(demo, "sync", "project", "demo").exit_code == 0
    Path(demo.runtime(co(demo), ".DS_Store")).write_text("x")
    demo.write_config("demo", memory=["style.md", "team/conventions.md"],
                      paths=[f"{demo.base}/offline", f"{demo.base}/gone"])
    for args in ((), ("--dry-run",)):
        text = run(demo, "sync", "project", "demo", *args).stdout
        doc: dict[str, Any] = json.loads(run(demo, "sync", "project", "demo", "--json",
                                             *args).stdout)
        warned = [line.split(": ", 1)[1] for line in text.splitlines()
                  if line.lstrip().startswith("warning: ")]
        found = [f["message"] for f in doc["findings"] if f["severity"] == "warning"]
        assert warned == found and warned


# ------------------------------------------------------------------- [U2] every line fits

WIDTH = 100
#: Characters around a path in a sentence: quotes, brackets, punctuation.
_AROUND = "'\"()[],;:."
#: The paths of the deep world that are named while missing (whole, each of them).
MISSING = ("/gone", "/plan.toml", "/offline-checkout-of-my-project", "/memory/notes",
           "/another-workspace", "/memory/my-project/notes", "/projects/newcomer",
           "/memory/other/notes", "/memory/typo/notes",
           "/projects/newcomer/agent.toml")


def _deep_world(tmp_path: Path) -> tuple[WS, dict[str, str]]:
    """A workspace and checkouts under a deep temporary path with hyphens (a path wider
    than a line, which a wrap could cut at a hyphen), and every kind of text: a conflict
    with its remedy, a foreign file, an offline checkout, a misspelt key, an undetected
    agent."""
    deep = tmp_path / "a-rather-long-directory-name-for-projects" / "client-work-2026"
    ws = WS(deep / "the-company-wide-agent-workspace")
    ws.add_file("team/engineering-conventions-and-review-guidelines.md", "c\n")
    ws.add_file("style.md", "s\n")
    ws.add_skill("review")
    ws.write_instructions("my-project", "# rules\n")
    ws.add_agent("claude-code", '[agents.claude-code]\nproject_instruction_path = '
                 '".claude/CLAUDE.md"\n[agents.claude-code.detect]\npaths = [".claude"]\n')
    laptop = ws.checkout("home/me/code/my-project-with-a-long-name")
    refs = ["team/engineering-conventions-and-review-guidelines.md", "style.md"]
    ws.write_config("my-project", memory=refs, paths={
        "laptop": laptop, "server": f"{deep}/srv/offline-checkout-of-my-project"})
    ws.write_config("other", memory=["style.md"], paths=[])
    os.makedirs(ws.runtime(laptop))
    Path(ws.runtime(laptop, "style.md")).write_text("mine\n")  # a conflict
    Path(ws.runtime(laptop, "notes-of-the-previous-sprint.md")).write_text("x\n")  # foreign
    ws.write_config("typo", raw=f'paths = ["{laptop}"]\nmemroy = ["style.md"]\n')
    return ws, {"laptop": laptop, "deep": str(deep)}


def _check_lines(text: str, base: str) -> None:
    for line in text.splitlines():
        assert len(line) <= WIDTH or whole(line), line
        for word in line.split():
            word = word.strip(_AROUND)
            if word.startswith(base):  # a path printed whole: it names something there
                assert os.path.lexists(word) or word.endswith(MISSING), (word, line)


def test_every_command_fits_100_columns_and_prints_every_path_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2]: no line of any command's output — reports, findings, remedies, errors,
    usage errors, help — over 100 columns, unless it is one path wider than the line;
    every path printed whole."""
    ws, where = _deep_world(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("AIKITO_DIR", ws.root)
    laptop = where["laptop"]
    plan = f"{where['deep']}/plan.toml"
    commands = [
        ("sync", "project", "my-project", "--dry-run"),
        ("sync", "project", "my-project", "--dry-run", "-v"),
        ("sync", "project", "my-project"),
        ("sync", "project", "my-project", "--check"),
        ("sync", "project", "typo"),
        ("sync", "project", "other"),
        ("sync", "project", "my-project", f"{where['deep']}/gone"),
        ("sync", "project", "my-project", "--force"),
        ("sync",), ("sync", "--dry-run"), ("sync", "-v"),
        ("status",), ("doctor",), ("doctor", "-v"),
        ("adopt", ws.runtime(laptop, "style.md"), "--dry-run"),
        ("init", f"{where['deep']}/another-workspace", "--dry-run"),
        ("init", "project", "newcomer", laptop, "--dry-run"),
        ("sync", "project", "other", laptop, "--dry-run", "--out", plan),
        ("apply", plan),
        ("--help",), ("sync", "--help"), ("sync", "project", "--help"), ("status", "--help"),
        ("doctor", "--help"), ("adopt", "--help"), ("init", "--help"), ("apply", "--help"),
        ("init", "project", "--help"), ("agents",), ("agents", "--help"),
        ("hook", "--help"), ("hook", "install", laptop, "--dry-run"), ("clean", "--help"),
    ]
    for cwd in (laptop, str(tmp_path)):
        monkeypatch.chdir(cwd)
        for argv in commands:
            res = CliRunner().invoke(cli, list(argv), catch_exceptions=False)
            assert res.exit_code != 0 or res.stdout, argv
            _check_lines(res.stdout, where["deep"])
            _check_lines(res.stderr, where["deep"])


def test_wrapping_hangs_and_never_cuts(tmp_path: Path) -> None:
    """The one wrapper: breaks only at spaces, deeper indent on every further line, a
    quoted path with a space kept whole, a word wider than the line alone on its line."""
    from aikito_mem.render.text import wrap

    long = "/" + "/".join(["segment-" * 3] * 6)
    text = f"  ! .agents/memory/a.md: found a regular file at {long} (move '/x y/z w' away)"
    lines = wrap(text, 60)
    assert lines[0].startswith("  ! .agents/memory/a.md:")
    assert all(line.startswith("      ") for line in lines[1:])
    assert f"      {long}" in lines and len(f"      {long}") > 60
    assert any("'/x y/z w'" in line for line in lines)
    quoted = "x" * 40 + " move '/a b/c d/e f/g h' away"
    for width in range(30, len(quoted)):
        assert any("'/a b/c d/e f/g h'" in line for line in wrap(quoted, width)), width
    assert " ".join(part.strip() for part in lines) == " ".join(text.split())
    assert wrap("short", 60) == ["short"]


# ------------------------------------------------------------- beside the reference tool


def test_the_second_console_script_names_itself(demo: WS) -> None:
    """``aikito-mem`` is the same command; its help and the commands its remedies name
    say ``aikito-mem`` (pasting them never runs the reference tool's ``aikito``)."""
    import tomllib

    with open(REPO / "pyproject.toml", "rb") as fh:
        scripts = tomllib.load(fh)["project"]["scripts"]
    assert scripts == {"aikito": "aikito_mem.console:main",
                       "aikito-mem": "aikito_mem.console:main"}
    env = child_env(None, AIKITO_DIR=demo.root)
    helped = subprocess.run([str(VENV_BIN / "aikito-mem"), "sync", "--help"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: aikito-mem sync ")
    checked = subprocess.run([str(VENV_BIN / "aikito-mem"), "sync", "project", "demo",
                              "--check"], env=env, capture_output=True, text=True,
                             timeout=120, cwd=co(demo))
    assert checked.returncode == 7
    assert checked.stdout.splitlines()[-1].endswith("to apply: aikito-mem sync project demo")


@pytest.mark.parametrize(("columns", "width"), [
    ("80", 80), ("132", 132), ("", 100), ("0", 100), ("-5", 100), ("wide", 100)])
def test_output_width_is_columns_else_the_terminal_else_100(
        monkeypatch: pytest.MonkeyPatch, columns: str, width: int) -> None:
    """[U2]: ``COLUMNS`` when it is a positive number, else the terminal's width (none
    here: pytest's stdout is not a terminal), else 100."""
    from aikito_mem.cli.options import output_width

    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr("os.get_terminal_size", _no_terminal)
    assert output_width() == width


def test_output_width_asks_the_terminal_when_columns_is_unset(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aikito_mem.cli.options import output_width

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr("os.get_terminal_size", lambda fd: os.terminal_size((77, 24)))
    assert output_width() == 77


def _no_terminal(fd: int) -> os.terminal_size:
    raise OSError(25, "Inappropriate ioctl for device")


def test_apostrophes_are_no_quoted_path() -> None:
    """[U2]: two apostrophes around a slash (``project's … never /, … project's``) are not
    a quoted path: the text between them still wraps (it once stood as one 200-column
    line); a quoted path, at a word's edges, is still kept whole."""
    from aikito_mem.render.text import wrap

    text = ("a checkout is a project's own working copy, never /, the home directory, the "
            "workspace, or an ancestor of it — pass the directory of the project's code")
    assert wrap(text, 60) == [
        "a checkout is a project's own working copy, never /, the",
        "    home directory, the workspace, or an ancestor of it —",
        "    pass the directory of the project's code"]
    quoted = "remove it: rm -r '/srv/a b/c d' and run again, or keep it where it is"
    for width in range(24, len(quoted)):
        assert any("'/srv/a b/c d'" in line for line in wrap(quoted, width)), width
