"""Review of issue 6 (status, doctor, adopt): regressions for the bugs the review found.

Each test reproduces one bug on real directories (tmpfs and git where needed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aikito_mem import adopt as adopt_mod
from aikito_mem.adopt import adopt
from aikito_mem.cli import cli
from aikito_mem.doctor import run
from tests.test_adopt import make, rt, tmpfs  # noqa: F401 - tmpfs is a fixture

HAS_GIT = shutil.which("git") is not None


def git(*args: str, cwd: Path | str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def doctor_ws(tmp: Path, checkouts: list[str]) -> Path:
    ws = tmp / "ws"
    (ws / "projects" / "demo" / "memory" / "notes").mkdir(parents=True)
    (ws / "memory").mkdir()
    (ws / "projects" / "demo" / "agent.toml").write_text(
        f"paths = {json.dumps(checkouts)}\n")
    return ws


# -- adopt ---------------------------------------------------------------------------------


def test_adopt_an_unexaminable_target_is_reported_not_a_traceback(tmp_path: Path) -> None:
    """An OSError while examining TARGET (ENAMETOOLONG here; EACCES, ELOOP, an unreadable
    subdirectory of a cross-filesystem tree alike) escaped ``adopt`` as a traceback."""
    ws, co = make(tmp_path)
    target = rt(co) / ("a" * 300)
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "adopt", str(target), "--json"],
                             catch_exceptions=False)
    d = json.loads(res.stdout)
    assert res.exit_code == 5 and d["exit_code"] == 5, d
    assert d["error"]["code"] == "adopt.examine_failed"
    assert [s["status"] for s in d["steps"]] == ["not_applied"] * 3


def test_cross_filesystem_removal_keeps_what_changed_after_the_last_check(
        tmp_path: Path, tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """After the copy is placed, the original was removed with ``shutil.rmtree``: a note an
    agent wrote (or a file it appended to) after the last inventory check was deleted with
    it although the copy does not hold it.  Only what was copied may be removed."""
    ws, co = make(tmp_path, tmpfs / "co")
    tree = rt(co) / "kb"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    (tree / "sub" / "b.md").write_text("b\n")
    real = adopt_mod.inventory
    calls: list[str] = []
    physical = str(tree.resolve())

    def racing_inventory(root: str) -> Any:
        out = real(root)
        if root == physical:
            calls.append(root)
            # validate, start of the copy, before the rename, after the rename: the
            # agent writes just after the last check.
            if len(calls) == 4:
                (tree / "sub" / "late.md").write_text("written during adopt\n")
                with open(tree / "a.md", "a") as f:
                    f.write("appended during adopt\n")
        return out

    monkeypatch.setattr(adopt_mod, "inventory", racing_inventory)
    d = adopt(str(tree), str(ws))
    assert len(calls) == 4
    assert d["exit_code"] != 0 and d["outcome"] == "partial", d
    # The new and the changed content survive where they were written ...
    assert (tree / "sub" / "late.md").read_text() == "written during adopt\n"
    assert (tree / "a.md").read_text() == "a\nappended during adopt\n"
    # ... and the verified copy is complete at the destination.
    assert (ws / "memory" / "kb" / "a.md").read_text() == "a\n"
    assert (ws / "memory" / "kb" / "sub" / "b.md").read_text() == "b\n"
    assert d["content_at"] == f"{ws.resolve()}/memory/kb"
    assert str(tree.resolve()) in d["error"]["message"]


def test_cross_filesystem_removal_still_removes_everything_copied(
        tmp_path: Path, tmpfs: Path) -> None:  # noqa: F811
    ws, co = make(tmp_path, tmpfs / "co")
    tree = rt(co) / "kb"
    (tree / "sub" / "empty").mkdir(parents=True)
    (tree / "a.md").write_text("a\n")
    os.symlink("a.md", tree / "sub" / "link")
    (tree / "sub" / "b.md").write_text("b\n")
    os.link(tree / "sub" / "b.md", tree / "b-again.md")  # unlinking one moves the other's ctime
    d = adopt(str(tree), str(ws))
    assert d["outcome"] == "adopted" and d["method"] == "copy", d
    assert os.path.islink(tree)
    assert os.readlink(ws / "memory" / "kb" / "sub" / "link") == "a.md"
    assert (ws / "memory" / "kb" / "sub" / "empty").is_dir()


# -- doctor --------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_doctor_survives_git_output_that_is_not_utf8(tmp_path: Path) -> None:
    """A worktree whose main repository lives at a non-UTF-8 path: ``git rev-parse
    --git-path info/exclude`` prints that path, and decoding it crashed doctor."""
    main = os.fsdecode(bytes(tmp_path) + b"/main\xfe")
    os.mkdir(main)
    git("init", "-q", cwd=main)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=main)
    co = tmp_path / "co"
    git("worktree", "add", "-q", str(co), cwd=main)
    ws = doctor_ws(tmp_path, [str(co)])
    res = CliRunner().invoke(cli, ["--workspace", str(ws), "doctor", "--json"],
                             catch_exceptions=False)
    d = json.loads(res.stdout)
    [check] = [c for c in d["checks"] if c["id"] == "git.ignore"]
    assert check["status"] == "warning"
    assert check["path"] == os.path.join(main, ".git", "info", "exclude")


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_doctor_does_not_run_the_fsmonitor_hook(tmp_path: Path) -> None:
    """``git check-ignore`` reads the index, which runs a configured ``core.fsmonitor``
    hook: an arbitrary command that may write.  Doctor asks git read-only questions."""
    co = tmp_path / "co"
    co.mkdir()
    git("init", "-q", cwd=co)
    (co / "f").write_text("f\n")
    git("add", "f", cwd=co)
    git("commit", "-q", "-m", "init", cwd=co)
    marker = tmp_path / "hook-ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    hook.chmod(0o755)
    git("config", "core.fsmonitor", str(hook), cwd=co)
    ws = doctor_ws(tmp_path, [str(co)])
    d = run(str(ws))
    assert [c["status"] for c in d["checks"] if c["id"] == "git.ignore"] == ["warning"]
    assert not marker.exists()


def test_doctor_index_check_is_linear(tmp_path: Path) -> None:
    """A large MEMORY.md (under the 4 MiB limit) with many ``[](<`` made the link regex
    rescan to the end of the line from every ``[``: quadratic, hours for 4 MiB."""
    index = tmp_path / "MEMORY.md"
    index.write_text("[](<" * 100_000 + "\n[ok](MEMORY.md)\n")
    code = ("import sys; from aikito_mem.doctor import check_index; "
            "print(len(check_index(sys.argv[1])))")
    proc = subprocess.run([sys.executable, "-c", code, str(index)], capture_output=True,
                          text=True, timeout=20, cwd=Path(__file__).parent.parent)
    assert proc.returncode == 0, proc.stderr


def test_status_and_doctor_print_non_utf8_names(tmp_path: Path) -> None:
    """Names that are not UTF-8 reach the output as lone surrogates; a strict stdout (any
    UTF-8 locale but C.UTF-8, and CliRunner) raised UnicodeEncodeError: a traceback."""
    ws = doctor_ws(tmp_path, [])
    odd = os.fsdecode(bytes(ws) + b"/memory/d\xfe")
    os.mkdir(odd)
    with open(os.path.join(odd, "MEMORY.md"), "w") as f:
        f.write("[gone](gone.md)\n")
    os.mkdir(os.fsdecode(bytes(ws) + b"/projects/p\xff"))
    with open(os.fsdecode(bytes(ws) + b"/projects/p\xff/agent.toml"), "w") as f:
        f.write("memory = []\n")
    runner = CliRunner()
    for command in ("doctor", "status"):
        res = runner.invoke(cli, ["--workspace", str(ws), command], catch_exceptions=False)
        assert res.exit_code in (0, 1), res.output
        res = runner.invoke(cli, ["--workspace", str(ws), command, "--json"],
                            catch_exceptions=False)
        json.loads(res.stdout)
    text = runner.invoke(cli, ["--workspace", str(ws), "doctor"]).stdout
    assert "d\\xfe/MEMORY.md" in text
    d = json.loads(runner.invoke(cli, ["--workspace", str(ws), "doctor", "--json"]).stdout)
    assert any(c["path"] == os.path.join(odd, "MEMORY.md") for c in d["checks"])


def test_doctor_survives_a_very_deep_memory_tree(tmp_path: Path) -> None:
    """``os.walk`` recurses (Python 3.11): 1,100 nested directories under ``<ws>/memory``
    raised RecursionError, a traceback."""
    ws = doctor_ws(tmp_path, [])
    fd = os.open(ws / "memory", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1100):
            os.mkdir("d", dir_fd=fd)
            new = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        index = os.open("MEMORY.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(index, b"[gone](gone.md)\n")
        os.close(index)
    finally:
        os.close(fd)
    (ws / "memory" / "loop").mkdir()
    os.symlink("MEMORY.md", ws / "memory" / "loop" / "MEMORY.md")  # a symlink loop
    try:
        d = run(str(ws))
    finally:  # pytest's own tmp cleanup (shutil.rmtree) recurses too: leave no deep tree
        subprocess.run(["rm", "-rf", str(ws / "memory" / "d")], check=True)
    by_path = {c["path"]: c for c in d["checks"] if c["id"] == "index.links"}
    [deep] = [c for p, c in by_path.items() if p.endswith("/d/MEMORY.md")]
    assert deep["status"] == "error"
    assert by_path[str(ws / "memory" / "loop" / "MEMORY.md")]["status"] == "warning"
