"""[L6] ``aikito hook install|uninstall``: the ``post-checkout`` hook, run by git itself
on ``git worktree add``; ``core.hooksPath``; an existing hook never overwritten; only
aikito's byte-identical hook removed; the hook never fails git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from aikito_mem.commands.hook import HOOK, HOOK_LINE
from tests.helpers.cli import VENV_BIN, invoke
from tests.helpers.gitrepo import git, git_env, init_repo, needs_git
from tests.helpers.programs import executable
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

pytestmark = needs_git


def hook_path(repo: str) -> Path:
    return Path(repo, ".git", "hooks", "post-checkout")


def repo_world(ws: WS, *, worktrees: bool = True) -> str:
    ws.add_file("style.md", "s\n")
    ws.add_skill("review")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"README": "r\n"})
    extra = "worktrees = true\n" if worktrees else ""
    ws.write_config("demo", raw=f'paths = ["{co}"]\nmemory = ["style.md"]\n'
                    f'skills = ["review"]\n{extra}')
    return co


def git_with_aikito(ws: WS, *args: str, cwd: str, path: str | None = None
                    ) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` as a user runs it: ``aikito`` on PATH, the workspace in AIKITO_DIR."""
    env = {**git_env(), "AIKITO_DIR": ws.root,
           "PATH": path if path is not None else f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_install_then_git_worktree_add_syncs_the_new_worktree(ws: WS) -> None:
    co = repo_world(ws)
    res = invoke("hook", "install", co)
    assert res.exit_code == 0, res.output
    assert "installed the post-checkout hook" in res.stdout
    hook = hook_path(co)
    assert hook.read_bytes() == HOOK and os.access(hook, os.X_OK)
    wt = f"{ws.checkouts_dir}/feature"
    proc = git_with_aikito(ws, "worktree", "add", "-q", "-b", "feature", wt, cwd=co)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # --quiet: nothing to say when it worked
    assert os.readlink(f"{wt}/.agents/memory/style.md") == f"{ws.root}/memory/style.md"
    assert os.readlink(f"{wt}/.agents/skills/review") == f"{ws.root}/skills/review"
    assert "feature" not in Path(ws.config_path("demo")).read_text()  # never registered


def test_the_hook_runs_only_for_a_new_worktree(ws: WS, tmp_path: Path) -> None:
    """A branch switch (first argument not the null commit) or a file checkout (third
    argument 0) does not sync: a fake aikito on PATH records every call."""
    co = repo_world(ws)
    assert invoke("hook", "install", co).exit_code == 0
    bin_dir = tmp_path / "bin"
    calls = tmp_path / "calls"
    executable(bin_dir, "aikito", f"echo \"$PWD $*\" >> '{calls}'\n")
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    git("branch", "other", cwd=co)
    assert git_with_aikito(ws, "checkout", "-q", "other", cwd=co, path=path).returncode == 0
    assert git_with_aikito(ws, "checkout", "-q", "--", "README", cwd=co,
                           path=path).returncode == 0
    assert not calls.exists()
    wt = f"{ws.checkouts_dir}/wt"
    assert git_with_aikito(ws, "worktree", "add", "-q", wt, "main", cwd=co,
                           path=path).returncode == 0
    assert calls.read_text() == f"{os.path.realpath(wt)} sync project --quiet\n"


@pytest.mark.parametrize("why", ["no aikito", "sync fails"])
def test_the_hook_never_fails_git(ws: WS, tmp_path: Path, why: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    co = repo_world(ws, worktrees=False)  # the new worktree belongs to no project
    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal's, which git passes on
    assert invoke("hook", "install", co).exit_code == 0
    path = None
    if why == "no aikito":  # the directories of git and sh, where no aikito is
        import shutil

        tools = {os.path.dirname(shutil.which(t) or "") for t in ("git", "sh", "tr")}
        if any(os.path.exists(f"{d}/aikito") for d in tools):
            pytest.skip("an aikito is installed beside git")
        path = os.pathsep.join(sorted(tools))
    wt = f"{ws.checkouts_dir}/wt"
    proc = git_with_aikito(ws, "worktree", "add", "-q", wt, cwd=co, path=path)
    assert proc.returncode == 0
    assert os.path.isdir(wt)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("aikito")]
    assert len(lines) == 1, proc.stderr
    words = "not found on PATH" if why == "no aikito" else "not synced: aikito: no project"
    assert words in lines[0]
    if why == "sync fails":  # [U2]: the whole message, its remedy too, never cut at a width
        assert lines[0].endswith("— name the project: aikito sync project NAME"), lines[0]


def test_core_hooks_path_is_respected(ws: WS) -> None:
    co = repo_world(ws)
    git("config", "core.hooksPath", ".githooks", cwd=co)
    res = invoke("hook", "install", co)
    assert res.exit_code == 0, res.output
    assert Path(co, ".githooks", "post-checkout").read_bytes() == HOOK
    assert not hook_path(co).exists()
    wt = f"{ws.checkouts_dir}/wt"
    assert git_with_aikito(ws, "worktree", "add", "-q", wt, cwd=co).returncode == 0
    assert os.path.islink(f"{wt}/.agents/memory/style.md")


def test_an_existing_hook_is_never_overwritten(ws: WS) -> None:
    co = repo_world(ws)
    hook = hook_path(co)
    hook.write_text("#!/bin/sh\necho mine\n")
    hook.chmod(0o755)
    before = snapshot(str(hook.parent))
    res = invoke("hook", "install", co)
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        f"{hook} exists and is not aikito's: it is left as it is. To sync new worktrees, "
        "add this line to it:", f"  {HOOK_LINE}"]
    assert snapshot(str(hook.parent)) == before
    res = invoke("hook", "uninstall", co)  # not aikito's: never removed
    assert res.exit_code == 1 and "left as it is" in res.stdout
    assert snapshot(str(hook.parent)) == before


def test_the_printed_line_does_the_hooks_job(ws: WS, tmp_path: Path) -> None:
    """The line a user adds to an existing hook syncs a new worktree and keeps git's
    exit status 0 for a branch switch."""
    co = repo_world(ws)
    hook = hook_path(co)
    hook.write_text(f"#!/bin/sh\necho mine\n{HOOK_LINE}\n")
    hook.chmod(0o755)
    wt = f"{ws.checkouts_dir}/wt"
    proc = git_with_aikito(ws, "worktree", "add", "-q", wt, cwd=co)
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(f"{wt}/.agents/memory/style.md")
    git("branch", "other", cwd=co)
    assert git_with_aikito(ws, "checkout", "-q", "other", cwd=co).returncode == 0


def test_install_is_idempotent_and_uninstall_removes_only_its_own(ws: WS) -> None:
    co = repo_world(ws)
    assert invoke("hook", "install", co).exit_code == 0
    hook = hook_path(co)
    before = snapshot(str(hook.parent))
    again = invoke("hook", "install", co)
    assert again.exit_code == 0 and "aikito's already; nothing to do" in again.stdout
    assert snapshot(str(hook.parent)) == before
    # An edited copy is no longer aikito's: uninstall leaves it.
    hook.write_bytes(HOOK + b"echo edited\n")
    assert invoke("hook", "uninstall", co).exit_code == 1 and hook.exists()
    dry = invoke("hook", "uninstall", co, "--dry-run")  # says the same: never "would remove"
    assert dry.exit_code == 1 and "left as it is" in dry.stdout
    hook.write_bytes(HOOK)
    res = invoke("hook", "uninstall", co)
    assert res.exit_code == 0 and "removed aikito's post-checkout hook" in res.stdout
    assert not hook.exists()
    res = invoke("hook", "uninstall", co)
    assert res.exit_code == 0 and "nothing to do" in res.stdout


def test_dry_runs_write_nothing(ws: WS) -> None:
    co = repo_world(ws)
    hooks = Path(co, ".git", "hooks")
    git("config", "core.hooksPath", "missing-hooks", cwd=co)
    before = snapshot(co)
    res = invoke("hook", "install", co, "--dry-run")
    assert res.exit_code == 0 and res.stdout.startswith("would install the post-checkout hook")
    assert snapshot(co) == before  # not even the hooks directory
    git("config", "--unset", "core.hooksPath", cwd=co)
    assert invoke("hook", "install", co).exit_code == 0
    before = snapshot(str(hooks))
    res = invoke("hook", "uninstall", co, "--dry-run")
    assert res.exit_code == 0 and res.stdout.startswith("would remove")
    assert snapshot(str(hooks)) == before


def test_the_hook_goes_to_the_shared_hooks_directory_from_a_linked_worktree(ws: WS) -> None:
    co = repo_world(ws)
    wt = f"{ws.checkouts_dir}/wt"
    git("worktree", "add", "-q", wt, cwd=co)
    assert invoke("hook", "install", wt).exit_code == 0
    assert hook_path(co).read_bytes() == HOOK


def test_a_directory_outside_git_is_a_configuration_error(ws: WS) -> None:
    plain = ws.checkout("plain")
    res = invoke("hook", "install", plain)
    assert res.exit_code == 4
    assert "is not inside a git work tree" in res.stderr
    assert invoke("hook", "install", f"{plain}/missing").exit_code == 4


def test_uninstall_rechecks_the_hook_just_before_removing_it(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook is read again just before the unlink: a hook edited meanwhile stays."""
    from aikito_mem.commands import hook as hook_mod

    co = repo_world(ws)
    assert invoke("hook", "install", co).exit_code == 0
    path = hook_path(co)
    real = hook_mod._read_hook
    reads: list[int] = []

    def edited_on_second_read(dir_fd: int) -> bytes | None:
        reads.append(dir_fd)
        if len(reads) == 2:
            path.write_bytes(HOOK + b"# edited meanwhile\n")
        return real(dir_fd)

    monkeypatch.setattr(hook_mod, "_read_hook", edited_on_second_read)
    report = hook_mod.uninstall(co)
    assert report.exit_code == 1 and path.read_bytes() == HOOK + b"# edited meanwhile\n"


def test_the_hook_is_named_where_the_command_ran_and_its_line_printed_whole(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """[U2]: in the checkout, the hook to edit is ``.git/hooks/post-checkout``; the line to
    add stands whole on its own line at any width (broken in two it would not be the
    hook's line), every other line wraps to the width."""
    co = repo_world(ws)
    hook_path(co).write_text("#!/bin/sh\necho mine\n")
    monkeypatch.chdir(co)
    res = invoke("hook", "install", env={"COLUMNS": "60"})
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        ".git/hooks/post-checkout exists and is not aikito's: it is",
        "    left as it is. To sync new worktrees, add this line to",
        "    it:",
        f"  {HOOK_LINE}"]
    monkeypatch.chdir(f"{co}/.git")
    res = invoke("hook", "uninstall", "..", env={"COLUMNS": "60"})
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        "hooks/post-checkout is not the hook aikito hook install",
        "    writes (another hook, or edited): it is left as it is —",
        "    remove aikito's line from it yourself"]


def test_the_hook_report_is_rendered_purely() -> None:
    """render/hook: a report and a display in, lines out — no filesystem (the paths
    exist nowhere); ``~/`` under the home directory, absolute elsewhere."""
    from aikito_mem.commands.hook import HookAction, HookOutcome, HookReport
    from aikito_mem.render.hook import render
    from aikito_mem.render.text import Display

    shown = Display(width=100, cwd="/nowhere/else", home="/nowhere/home")
    cases = {
        (HookAction.INSTALL, HookOutcome.CREATED):
            "installed the post-checkout hook ~/co/.git/hooks/post-checkout: a new git "
            "worktree is synced as it\n    is created (aikito sync project --quiet)",
        (HookAction.INSTALL, HookOutcome.PLANNED):
            "would install the post-checkout hook ~/co/.git/hooks/post-checkout (--dry-run: "
            "nothing written)",
        (HookAction.INSTALL, HookOutcome.UNCHANGED):
            "the post-checkout hook ~/co/.git/hooks/post-checkout is aikito's already; "
            "nothing to do",
        (HookAction.UNINSTALL, HookOutcome.REMOVED):
            "removed aikito's post-checkout hook ~/co/.git/hooks/post-checkout",
        (HookAction.UNINSTALL, HookOutcome.PLANNED):
            "would remove aikito's post-checkout hook ~/co/.git/hooks/post-checkout "
            "(--dry-run: nothing written)",
        (HookAction.UNINSTALL, HookOutcome.UNCHANGED):
            "no post-checkout hook at ~/co/.git/hooks/post-checkout; nothing to do",
    }
    for (action, outcome), text in cases.items():
        report = HookReport(action, "/nowhere/home/co",
                            "/nowhere/home/co/.git/hooks/post-checkout", outcome)
        out = render(report, shown)
        assert (out.exit_code, "\n".join(out.lines), out.errors) == (0, text, ())
    away = HookReport(HookAction.INSTALL, "/srv/co", "/srv/co/.git/hooks/post-checkout",
                      HookOutcome.REFUSED)
    assert render(away, shown).lines == (
        "/srv/co/.git/hooks/post-checkout exists and is not aikito's: it is left as it is. "
        "To sync new\n    worktrees, add this line to it:", f"  {HOOK_LINE}")
