"""Races on the write path ([E4], [E2]), through the executor's test seam
``aikito_mem.executor.execute.before_write`` (called as ``hook(op)`` just before each write
syscall, after that write's own just-in-time check — the worst possible moment).

A parent directory (``.agents``, ``.agents/memory`` or ``.agents/memory/team``) is renamed
away and replaced by a symlink to a directory outside the checkout, at the first write or
at a later one.  Whatever happens — the run stops as stale (exit 3), or the write in flight
lands in the moved real directory — nothing is ever written outside the checkout, nothing
is written under the swapped-in symlink, and no write follows the moved directory after
the write in flight.  The same holds when the directory is moved *out of* the checkout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import tomli_w

import aikito_mem.executor.execute as execute_mod
import aikito_mem.executor.writer as writer_mod
from aikito_mem import Project
from aikito_mem.errors import ExecutionError, StalePlanError
from aikito_mem.model import Operation
from tests.helpers.workspace import WS

FIRST = ["a.md", "team/x.md"]
SECOND = ["a.md", "b.md", "c.md", "team/x.md", "team/y.md", "team/z.md"]


def _world(tmp_path: Path) -> tuple[str, str, str, str]:
    """:class:`WS` at ``tmp_path`` holding every reference of ``SECOND``, with its checkouts
    directory as the checkout, and ``outside`` and ``away`` beside them; returns (base,
    workspace, checkout, outside)."""
    ws = WS(tmp_path)
    root = str(ws.base)
    for d in (os.path.dirname(ws.config_path("demo")), f"{root}/outside", f"{root}/away"):
        os.makedirs(d)
    for ref in SECOND:
        ws.add_file(ref, ref)
    return root, ws.root, ws.checkouts_dir, f"{root}/outside"


def _config(ws: str, co: str, memory: list[str]) -> None:
    Path(f"{ws}/projects/demo/agent.toml").write_text(
        tomli_w.dumps({"paths": [co], "memory": memory}))


def _tree(path: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        out.extend(os.path.relpath(f"{dirpath}/{n}", path) for n in dirnames + filenames)
    return sorted(out)


def _hook_at(n: int, action: Callable[[], None]) -> Callable[[Operation], None]:
    calls = {"n": 0}

    def hook(op: Operation) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            action()

    return hook


@pytest.mark.parametrize("moved_to", ["inside", "outside"])
@pytest.mark.parametrize("at_write", [1, 2, 4])
@pytest.mark.parametrize("swapped", [".agents", ".agents/memory", ".agents/memory/team"])
def test_parent_swapped_for_symlink_never_writes_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str, at_write: int, moved_to: str
) -> None:
    root, ws, co, outside = _world(tmp_path)
    _config(ws, co, FIRST)
    Project.load("demo", workspace=ws).sync()
    _config(ws, co, SECOND)
    project = Project.load("demo", workspace=ws)
    plan = project.plan()
    assert plan.summary()["create"] == 4
    moved = f"{co}/moved" if moved_to == "inside" else f"{root}/away/moved"
    record: dict[str, list[str]] = {}

    def swap() -> None:
        os.rename(f"{co}/{swapped}", moved)
        os.symlink(outside, f"{co}/{swapped}")
        record["moved"] = _tree(moved)

    monkeypatch.setattr(execute_mod, "before_write", _hook_at(at_write, swap))
    try:
        result = project.execute(plan)
    except (StalePlanError, ExecutionError) as exc:
        assert exc.exit_code in (3, 5)
        result = exc.result
    else:
        # Only acceptable when the swap happened during the very last write.
        assert at_write == len(plan.changes), f"the run did not notice {swapped} moved"
    assert _tree(outside) == [], "a write went through the swapped-in symlink"
    # At most the write in flight (the one whose hook did the swap) lands in the moved
    # directory; nothing after it follows the move.
    after = _tree(moved)
    new = sorted(set(after) - set(record["moved"]))
    assert len(new) <= 1, f"writes followed the moved directory: {new}"
    applied = sum(1 for s in result.statuses if s.value == "applied")
    assert applied >= at_write  # the write in flight finished and is reported
    assert os.readlink(f"{co}/{swapped}") == outside  # the user's symlink is untouched


@pytest.mark.parametrize("swapped", [".agents", ".agents/memory", ".agents/memory/team"])
def test_parent_swapped_before_execution_is_stale_and_writes_nothing(
    tmp_path: Path, swapped: str
) -> None:
    _root, ws, co, outside = _world(tmp_path)
    _config(ws, co, FIRST)
    Project.load("demo", workspace=ws).sync()
    _config(ws, co, SECOND)
    project = Project.load("demo", workspace=ws)
    plan = project.plan()
    os.rename(f"{co}/{swapped}", f"{co}/moved")
    os.symlink(outside, f"{co}/{swapped}")
    before = _tree(co)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any(swapped in d for d in info.value.differences)
    assert _tree(outside) == []
    assert _tree(co) == before


def test_target_appearing_in_the_window_is_never_clobbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the ``lstat`` proving a target absent and ``symlinkat``, the user creates a
    file there: ``symlinkat`` refuses (EEXIST) → stale, the file is intact."""
    _root, ws, co, _outside = _world(tmp_path)
    _config(ws, co, SECOND)
    project = Project.load("demo", workspace=ws)
    plan = project.plan()

    def user_writes(op: Operation) -> None:
        if op.target.endswith("/c.md"):
            Path(op.target).write_text("mine\n")

    monkeypatch.setattr(execute_mod, "before_write", user_writes)
    with pytest.raises(StalePlanError):
        project.execute(plan)
    assert Path(f"{co}/.agents/memory/c.md").read_text() == "mine\n"
    assert not os.path.islink(f"{co}/.agents/memory/c.md")


def test_readlink_unlink_window_worst_case_is_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one window POSIX leaves open (docs/safety.md, "residual windows"): between the
    ``readlinkat`` that proves a stale link is aikito's and the ``unlinkat``, a process
    that replaces that very entry loses its replacement.  This pins the worst case: only
    that one name, in aikito's own runtime tree, is affected — nothing else."""
    _root, ws, co, outside = _world(tmp_path)
    _config(ws, co, ["a.md", "b.md"])
    Project.load("demo", workspace=ws).sync()
    Path(f"{co}/.agents/memory/keep.txt").write_text("user\n")
    _config(ws, co, ["a.md"])
    project = Project.load("demo", workspace=ws)

    def user_replaces(op: Operation) -> None:
        if op.target.endswith("/b.md"):
            os.unlink(op.target)
            Path(op.target).write_text("raced in\n")

    monkeypatch.setattr(execute_mod, "before_write", user_replaces)
    project.sync()
    assert _tree(f"{co}/.agents/memory") == ["a.md", "keep.txt"]
    assert Path(f"{co}/.agents/memory/keep.txt").read_text() == "user\n"
    assert _tree(outside) == []


def test_a_directory_replaced_before_its_prune_is_kept(
        ws: WS, monkeypatch: pytest.MonkeyPatch) -> None:
    """[P2]/[E4]: the prune of ``team/`` re-checks that it is the very directory the plan
    saw (its inode).  ``team/a.md`` and ``z.md`` synced, the memory list emptied; between
    the unlink of ``z.md`` and the prune of ``team/`` the user puts a new empty directory
    of their own in its place: the run stops as stale (exit 3) and their directory stays."""
    from click.testing import CliRunner

    from aikito_mem.cli import cli

    ws.add_file("team/a.md", "a\n")
    ws.add_file("z.md", "z\n")
    co = ws.checkout("main")
    ws.write_config("demo", memory=["team/a.md", "z.md"], paths=[co])
    ws.project("demo").sync()
    ws.write_config("demo", memory=[], paths=[co])
    team = ws.runtime(co, "team")
    kept = f"{ws.base}/the-old-team"
    real_unlink = writer_mod.Writer.unlink

    def unlink_then_swap(self: writer_mod.Writer, op: Operation) -> None:
        real_unlink(self, op)
        if op.target.endswith("/z.md"):  # the last unlink: next comes the prune of team/
            os.rename(team, kept)  # the old directory lives on: a new inode for theirs
            os.mkdir(team)
            Path(kept, ".theirs").touch()

    monkeypatch.setattr(writer_mod.Writer, "unlink", unlink_then_swap)
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                   "--json"], catch_exceptions=False)
    assert res.exit_code == 3, res.stdout
    doc = json.loads(res.stdout)
    assert doc["outcome"] == "stale"
    (prune,) = [o for o in doc["operations"] if o["entry"] == "directory"]
    assert prune["target"] == team and prune["status"] == "not_applied"
    assert os.path.isdir(team) and not os.path.islink(team)  # their directory is kept
    assert os.listdir(ws.runtime(co)) == ["team"]
