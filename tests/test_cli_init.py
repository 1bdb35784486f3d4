"""``aikito init [PATH]`` and ``aikito init project NAME [CHECKOUT]`` on the command line:
the text and ``aikito.init/1`` output, the exit codes 0 / 2 / 3 / 4 / 5 / 143 through the
one error handler, ``--dry-run`` writing nothing, an existing workspace completed and an
existing project refused (nothing written), the help and its examples.

What the engine creates, and its refusals one by one: tests/test_init.py and
tests/safety/test_init_safety.py.  Here: real temporary directories, in process through
``click.testing.CliRunner`` (HOME and XDG_CONFIG_HOME point into the test's own
temporary directory, tests/conftest.py), plus one real process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from aikito_mem import signals
from aikito_mem.cli import cli
from tests.helpers.snapshots import changed, snapshot

#: What ``aikito init`` creates in a fresh workspace, relative to it.
WORKSPACE = ["projects/", "memory/", "skills/", "agents/", "subagents/", "layout.toml"]


@pytest.fixture
def home() -> Path:
    home = Path(os.environ["HOME"])
    home.mkdir(parents=True, exist_ok=True)
    return Path(os.path.realpath(home))


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, prog_name="aikito")


def doc(result: Result) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def words(result: Result) -> list[tuple[str, str]]:
    """``(status word, path)`` of each entry line of the text output."""
    out = []
    for line in result.stdout.splitlines():
        if line.startswith("  "):
            word, _, path = line.strip().rpartition(" ")
            out.append((word.strip(), path))
    return out


# --------------------------------------------------------------------------- aikito init


def test_init_creates_the_default_workspace_and_the_pointer(home: Path) -> None:
    (home / ".claude").mkdir()  # Claude Code detected (and nothing on PATH)
    result = run("init", env={"PATH": ""})
    assert result.exit_code == 0, result.output
    ws = home / "aikito"
    lines = result.stdout.splitlines()
    assert lines[0] == f"Initialised workspace {ws}"
    assert lines[-1] == "Next: aikito init project NAME [CHECKOUT]"
    listed = words(result)
    assert all(word == "created" for word, _ in listed)
    paths = [p for _, p in listed]
    assert [p for p in paths if p in WORKSPACE] == WORKSPACE
    assert [p for p in paths if p.startswith("agents/")] == ["agents/", "agents/claude-code.toml"]
    assert "~/.config/aikito/workspace" in paths
    for rel in WORKSPACE:
        assert (ws / rel).exists()
    assert (home / ".config/aikito/workspace").read_text() == f"{ws}\n"
    assert result.stderr == ""


def test_init_again_adds_nothing_and_says_what_existed(home: Path) -> None:
    assert run("init").exit_code == 0
    before = snapshot(home)
    again = run("init")
    assert again.exit_code == 0, again.output
    assert changed(before, snapshot(home)) == set()
    assert again.stdout.splitlines()[0] == (
        f"Workspace {home}/aikito is already initialised; nothing to add.")
    assert {w for w, _ in words(again)} == {"exists"}
    d = doc(run("init", "--json"))
    assert d["outcome"] == "unchanged" and d["exit_code"] == 0 and d["error"] is None
    assert d["summary"]["created"] == 0


def test_init_completes_a_partial_workspace(home: Path) -> None:
    ws = home / "aikito"
    (ws / "projects/demo").mkdir(parents=True)
    (ws / "projects/demo/agent.toml").write_text("memory = []\n")
    (ws / "memory").mkdir()
    (ws / "memory/x.md").write_text("mine\n")
    before = snapshot(ws / "projects", ws / "memory")
    result = run("init")
    assert result.exit_code == 0, result.output
    listed = dict((p, w) for w, p in words(result))
    assert listed["projects/"] == "exists" and listed["memory/"] == "exists"
    assert listed["skills/"] == "created" and listed["layout.toml"] == "created"
    assert changed(before, snapshot(ws / "projects", ws / "memory")) == set()


@pytest.mark.parametrize("order", ["flag first", "flag last"])
def test_dry_run_writes_nothing_and_says_what_it_would_create(
    home: Path, tmp_path: Path, order: str
) -> None:
    target = tmp_path / "new" / "ws"
    before = snapshot(home, tmp_path)
    args = ["init", "--dry-run", str(target)] if order == "flag first" else \
        ["init", str(target), "--dry-run"]
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert changed(before, snapshot(home, tmp_path)) == set()
    assert result.stdout.startswith(f"Would initialise workspace {tmp_path}/new/ws\n")
    assert {w for w, _ in words(result)} == {"would create"}
    d = doc(run(*args, "--json"))
    assert d["schema"] == "aikito.init/1" and d["dry_run"] is True
    assert d["outcome"] == "planned" and d["exit_code"] == 0
    assert d["found_via"] == "argument"
    assert changed(before, snapshot(home, tmp_path)) == set()


def test_json_document(home: Path) -> None:
    result = run("init", "--json")
    assert result.exit_code == 0
    d = doc(result)
    assert d["schema"] == "aikito.init/1" and d["command"] == "workspace"
    assert d["workspace"] == f"{home}/aikito" and d["found_via"] == "default"
    assert d["outcome"] == "applied" and d["exit_code"] == 0 and d["error"] is None
    assert d["pointer"] == f"{home}/.config/aikito/workspace"
    assert {e["status"] for e in d["entries"]} == {"created"}
    assert d["summary"]["created"] == len(d["entries"])


def test_path_argument_aikito_dir_and_the_group_workspace(home: Path, tmp_path: Path) -> None:
    by_env = run("init", "--json", env={"AIKITO_DIR": str(tmp_path / "env")})
    assert doc(by_env)["found_via"] == "AIKITO_DIR"
    assert (tmp_path / "env/projects").is_dir()
    by_group = run("--workspace", str(tmp_path / "group"), "init")
    assert by_group.exit_code == 0
    assert (tmp_path / "group/projects").is_dir()
    same = run("--workspace", str(tmp_path / "group"), "init", str(tmp_path / "group"))
    assert same.exit_code == 0


def test_a_workspace_directory_named_project(home: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``project`` is the subcommand; the directory is written ``./project``; a PATH that
    starts with ``-`` comes after ``--``."""
    monkeypatch.chdir(tmp_path)
    assert run("init", "./project").exit_code == 0
    assert (tmp_path / "project/projects").is_dir()
    dashed = run("init", "--", "-ws", "--dry-run")
    assert dashed.exit_code == 0, dashed.output
    assert dashed.stdout.startswith(f"Would initialise workspace {tmp_path}/-ws\n")


@pytest.mark.parametrize("args", [
    ["init", "a", "b"],
    ["--workspace", "/tmp/one", "init", "/tmp/two"],
    ["init", "project"],
    ["init", "project", "a", "b", "c"],
    ["init", "--bogus"],
])
def test_usage_errors_are_exit_2_without_json(home: Path, args: list[str]) -> None:
    before = snapshot(home)
    result = run(*args, "--json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Usage: aikito init" in result.stderr
    assert changed(before, snapshot(home)) == set()


def test_a_configuration_error_is_exit_4_with_its_document(home: Path, tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code/main.c").write_text("int main;\n")
    before = snapshot(tmp_path)
    text = run("init", str(tmp_path / "code"))
    assert text.exit_code == 4
    assert text.stdout == ""
    assert text.stderr.startswith("aikito: ") and "does not look like a workspace" in text.stderr
    d = doc(run("init", str(tmp_path / "code"), "--json"))
    assert d["exit_code"] == 4 and d["outcome"] == "config_error"
    assert d["error"]["code"] == "config.init_not_workspace"
    assert d["command"] == "workspace" and d["entries"] == []
    assert changed(before, snapshot(tmp_path)) == set()


def test_warnings_are_printed(home: Path, tmp_path: Path) -> None:
    assert run("init").exit_code == 0
    other = run("init", str(tmp_path / "second"))
    assert other.exit_code == 0
    warning = [line for line in other.stdout.splitlines() if line.startswith("warning: ")]
    assert len(warning) == 1 and "another workspace" in warning[0]
    d = doc(run("init", str(tmp_path / "second"), "--json"))
    assert [f["code"] for f in d["findings"]] == ["init.pointer"]


# --------------------------------------------------------------------- stale, failed, signal


def _hook_before_write(monkeypatch: pytest.MonkeyPatch, n: int, action: Any) -> None:
    """Run ``action`` at the ``n``-th signal check of the engine: the first is where
    planning starts, the next ones come just before each write (``n - 1``-th write)."""
    real = signals.check
    calls = [0]

    def check() -> None:
        calls[0] += 1
        if calls[0] == n:
            action()
        real()

    monkeypatch.setattr(signals, "check", check)


@pytest.mark.parametrize("as_json", [False, True])
def test_an_entry_that_appears_meanwhile_is_exit_3_untouched(
    home: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    ws = home / "aikito"
    _hook_before_write(monkeypatch, 4, lambda: (ws / "memory").mkdir())  # after projects/
    result = run("init", *(["--json"] if as_json else []))
    assert result.exit_code == 3, result.output
    assert not (ws / "skills").exists() and os.listdir(ws / "memory") == []
    if not as_json:
        assert "appeared while aikito init was running" in result.stderr
        assert result.stdout.splitlines() == ["Created before stopping:",
                                              "  created      projects/"]
        return
    d = doc(result)
    assert d["exit_code"] == 3 and d["outcome"] == "stale"
    assert d["error"]["code"] == "sync.stale" and d["error"]["differences"]
    status = {e["path"]: e["status"] for e in d["entries"]}
    assert status[f"{ws}/projects"] == "created" and status[f"{ws}/skills"] == "planned"


def test_a_failed_write_is_exit_5(home: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace directory swapped for a symlink after it was made: the next write,
    through an ``O_NOFOLLOW`` descriptor, fails; nothing is written through the link."""
    ws, elsewhere = home / "aikito", tmp_path / "elsewhere"

    def swap() -> None:
        ws.rename(elsewhere)
        ws.symlink_to(elsewhere)

    _hook_before_write(monkeypatch, 3, swap)  # the workspace made, projects/ next
    d = doc(run("init", "--json"))
    assert d["exit_code"] == 5 and d["outcome"] == "failed"
    assert "replaced by a symlink" in d["error"]["message"]
    assert os.listdir(elsewhere) == []


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_before_the_next_write(
    home: Path, monkeypatch: pytest.MonkeyPatch, signum: int, code: int
) -> None:
    ws = home / "aikito"
    _hook_before_write(monkeypatch, 4, lambda: os.kill(os.getpid(), signum))
    d = doc(run("init", "--json"))
    assert d["exit_code"] == code and d["outcome"] == "interrupted"
    assert d["error"]["code"] == "sync.interrupted"
    assert (ws / "projects").is_dir() and not (ws / "memory").exists()
    created = [e["path"] for e in d["entries"] if e["status"] == "created"]
    assert created == [str(ws), f"{ws}/projects"]


# -------------------------------------------------------------------- aikito init project


@pytest.fixture
def workspace(home: Path) -> Path:
    assert run("init").exit_code == 0
    return home / "aikito"


def test_init_project_registers_its_checkout_under_home(home: Path, workspace: Path) -> None:
    (home / "code/demo").mkdir(parents=True)
    result = run("init", "project", "demo", str(home / "code/demo"))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Created project demo in {workspace}",
        "  created      projects/demo/",
        "  created      projects/demo/agent.toml",
        "  checkout     ~/code/demo",
        "Next: aikito sync project demo",
    ]
    text = (workspace / "projects/demo/agent.toml").read_text()
    assert 'paths = ["~/code/demo"]' in text.splitlines()
    sync = run("sync", "project", "demo")
    assert sync.exit_code == 0, sync.output


def test_init_project_without_checkout_and_as_json(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no git work tree here: no checkout to register ([U1])
    d = doc(run("init", "project", "api", "--json"))
    assert d["exit_code"] == 0 and d["outcome"] == "applied" and d["error"] is None
    assert d["command"] == "project" and d["project"] == "api"
    assert d["checkout"] is None and d["registered_as"] is None
    assert d["found_via"] == "pointer file"
    assert "paths = []" in (workspace / "projects/api/agent.toml").read_text().splitlines()
    # --json given to init itself, before the subcommand, counts too.
    assert doc(run("init", "--json", "project", "web"))["project"] == "web"


def test_init_project_dry_run_writes_nothing(home: Path, workspace: Path) -> None:
    (home / "co").mkdir()
    before = snapshot(home)
    for args in (["init", "project", "demo", str(home / "co"), "--dry-run"],
                 ["init", "--dry-run", "project", "demo", str(home / "co")]):
        result = run(*args)
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[:3] == [
            f"Would create project demo in {workspace}",
            "  would create projects/demo/",
            "  would create projects/demo/agent.toml",
        ]
    assert changed(before, snapshot(home)) == set()


def test_an_existing_project_is_exit_4_and_nothing_is_written(workspace: Path) -> None:
    assert run("init", "project", "demo").exit_code == 0
    config = workspace / "projects/demo/agent.toml"
    config.write_text("# mine\nmemory = []\n")
    before = snapshot(workspace)
    for extra in ([], ["--dry-run"]):
        text = run("init", "project", "demo", *extra)
        assert text.exit_code == 4
        assert text.stdout == ""
        assert "project 'demo' already exists" in text.stderr
    d = doc(run("init", "project", "demo", "--json"))
    assert d["exit_code"] == 4 and d["outcome"] == "config_error"
    assert d["error"]["code"] == "config.project_exists" and d["project"] == "demo"
    assert changed(before, snapshot(workspace)) == set()


def test_init_project_uses_the_group_workspace(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert run("init", str(other)).exit_code == 0
    d = doc(run("--workspace", str(other), "init", "project", "demo", "--json"))
    assert d["exit_code"] == 0 and d["found_via"] == "option"
    assert (other / "projects/demo/agent.toml").is_file()
    missing = doc(run("--workspace", str(tmp_path / "none"), "init", "project", "x", "--json"))
    assert missing["exit_code"] == 4 and missing["outcome"] == "config_error"
    assert missing["workspace"] is None and missing["entries"] == []


def test_init_project_refuses_a_missing_checkout(workspace: Path, tmp_path: Path) -> None:
    result = run("init", "project", "demo", str(tmp_path / "nowhere"))
    assert result.exit_code == 4
    assert "does not exist" in result.stderr
    assert not (workspace / "projects/demo").exists()


# --------------------------------------------------------------------------------- help


def test_help_shows_both_forms_and_examples() -> None:
    top = run("--help")
    assert "init" in top.stdout and "Create a workspace, or a project in it." in top.stdout
    init = run("init", "--help")
    assert init.exit_code == 0
    assert init.stdout.startswith("Usage: aikito init [OPTIONS] [PATH]\n"
                                  "       aikito init workspace [OPTIONS] [PATH]\n"
                                  "       aikito init project [OPTIONS] NAME [CHECKOUT]\n")
    assert "Examples:" in init.stdout and "aikito init project demo ~/code/demo" in init.stdout
    assert run("init", "somewhere", "--help").stdout == init.stdout
    project = run("init", "project", "--help")
    assert project.exit_code == 0
    assert "Examples:" in project.stdout and "--dry-run" in project.stdout
    flat = " ".join(project.stdout.split())
    assert "Exit 0 created" in flat and "4 configuration error" in flat


def test_a_real_process(home: Path) -> None:
    """The console entry point end to end: exit code and one JSON document."""
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    proc = subprocess.run([sys.executable, "-m", "aikito_mem", "init", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["outcome"] == "applied"
    again = subprocess.run([sys.executable, "-m", "aikito_mem", "init", "project", "demo",
                            "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr
    twice = subprocess.run([sys.executable, "-m", "aikito_mem", "init", "project", "demo"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert twice.returncode == 4 and "Traceback" not in twice.stderr
