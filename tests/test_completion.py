"""Shell completion through click's completion variable (``_AIKITO_COMPLETE``), in real
processes as a shell runs them: project names, registered checkout paths, plan files —
and nothing written, nothing printed on stderr, whatever is broken."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

VENV_BIN = Path(sys.executable).parent


def complete(words: str, *, env: dict[str, str] | None = None, shell: str = "bash",
             cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """What ``aikito`` answers to <TAB> after ``words`` (the last word being completed)."""
    parts = words.split(" ")
    # bash and zsh pass the index of the word completed; fish passes the word itself.
    cword = parts[-1] if shell == "fish" else str(len(parts) - 1)
    base = {k: v for k, v in os.environ.items() if k != "AIKITO_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "aikito_mem"], capture_output=True, text=True, timeout=60,
        cwd=cwd,
        env={**base, **(env or {}), "_AIKITO_COMPLETE": f"{shell}_complete",
             "COMP_WORDS": words, "COMP_CWORD": cword})


def items(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return [line for line in proc.stdout.splitlines() if line]


@pytest.fixture
def projects(ws: WS) -> WS:
    co = ws.checkout("demo-laptop")
    ws.write_config("demo", memory=[], paths={"laptop": co, "server": "/srv/demo-server"})
    ws.write_config("deploy", memory=[], paths=[])
    ws.write_config("web", memory=[], paths=[])
    return ws


def test_completes_a_project_name(projects: WS) -> None:
    """The test of SPEC §9 completion: ``aikito sync project de<TAB>``, the workspace
    found from AIKITO_DIR as every command finds it."""
    env = {"AIKITO_DIR": projects.root}
    assert items(complete("aikito sync project de", env=env)) == ["plain,demo",
                                                                  "plain,deploy"]
    assert items(complete("aikito sync project w", env=env)) == ["plain,web"]
    assert items(complete("aikito sync project ", env=env)) == [
        "plain,demo", "plain,deploy", "plain,web"]


def test_the_workspace_option_on_the_line_is_used(projects: WS) -> None:
    line = f"aikito --workspace {projects.root} sync project we"
    assert items(complete(line)) == ["plain,web"]


def test_completes_registered_checkout_paths_then_directories(projects: WS) -> None:
    env = {"AIKITO_DIR": projects.root}
    laptop = f"{projects.checkouts_dir}/demo-laptop"
    assert items(complete("aikito sync project demo ", env=env)) == [
        "dir,", f"plain,{laptop}", "plain,/srv/demo-server"]
    assert items(complete("aikito sync project demo /srv/", env=env)) == [
        "dir,/srv/", "plain,/srv/demo-server"]
    # No registered path matches: the shell's own directory completion.
    assert items(complete("aikito sync project web /", env=env)) == ["dir,/"]


def test_completes_plan_files_as_files(projects: WS) -> None:
    assert items(complete("aikito apply pl")) == ["file,pl"]
    env = {"AIKITO_DIR": projects.root}
    assert items(complete("aikito sync project demo --dry-run --out p", env=env)) == [
        "file,p"]


def test_completion_never_fails_loudly(ws: WS, tmp_path: Path) -> None:
    """A workspace that does not exist, a broken agent.toml, an unknown project: nothing
    (or the shell's own directories) is completed, nothing goes to stderr, exit 0."""
    missing = {"AIKITO_DIR": str(tmp_path / "nowhere")}
    assert items(complete("aikito sync project ", env=missing)) == []
    ws.write_config("broken", raw="memory = [\n")
    env = {"AIKITO_DIR": ws.root}
    assert items(complete("aikito sync project broken ", env=env)) == ["dir,"]
    assert items(complete("aikito sync project nosuch ", env=env)) == ["dir,"]
    assert items(complete("aikito sync project . ", env=env)) == ["dir,"]
    assert items(complete("aikito sync project ", env=env)) == ["plain,broken"]


def test_completion_writes_nothing(projects: WS, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    env = {"AIKITO_DIR": projects.root}
    for words in ("aikito sync project ", "aikito sync project demo ",
                  "aikito apply ", "aikito s"):
        items(complete(words, env=env, cwd=str(tmp_path)))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_complete_project_names(projects: WS, shell: str) -> None:
    proc = complete("aikito sync project w", env={"AIKITO_DIR": projects.root},
                    shell=shell)
    found = "\n".join(items(proc))
    assert "web" in found and "demo" not in found


@pytest.mark.parametrize(("shell", "marker"), [
    ("bash", "complete -o nosort -F _aikito_completion aikito"),
    ("zsh", "compdef _aikito_completion aikito"),
    ("fish", "complete --no-files --command aikito"),
])
def test_the_documented_activation_scripts(shell: str, marker: str) -> None:
    """README: ``eval "$(_AIKITO_COMPLETE=bash_source aikito)"`` and its zsh and fish
    forms print the shell's script."""
    script = VENV_BIN / "aikito"
    if not script.exists():
        pytest.skip("the console script is not installed beside this interpreter")
    proc = subprocess.run([str(script)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "_AIKITO_COMPLETE": f"{shell}_source"})
    assert proc.returncode == 0, proc.stderr
    assert marker in proc.stdout
