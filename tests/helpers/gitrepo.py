"""Real git repositories for the tests of the git room (§15): ``git init``, commits,
``git worktree add`` — run with a fixed identity and no user configuration."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

#: Skip marker for the tests that need a real ``git``.
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", GIT_CONFIG_NOSYSTEM="1")
    return env


def git(*args: str, cwd: str | Path) -> str:
    """``git ARGS`` in ``cwd``; its standard output (a failure fails the test)."""
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env=git_env(), check=False, timeout=60)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def init_repo(path: str | Path, files: Mapping[str, str] | None = None) -> str:
    """A repository at ``path`` (created) with ``files`` (relative path → text)
    committed (an empty first commit without any); returns the physical path."""
    os.makedirs(path, exist_ok=True)
    git("init", "-q", "-b", "main", cwd=path)
    for rel, text in (files or {}).items():
        full = Path(path, rel)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")
    if files:
        git("add", "--", *files, cwd=path)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=path)
    return os.path.realpath(path)


def status(path: str | Path) -> list[str]:
    """``git status --porcelain --untracked-files=all`` lines."""
    return git("status", "--porcelain", "--untracked-files=all", cwd=path).splitlines()
