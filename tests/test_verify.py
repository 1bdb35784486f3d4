"""[E2]: verification names *every* difference — a target that appeared inside directories
that were themselves created after planning is named too."""

from __future__ import annotations

import os

import pytest

from aikito_mem.errors import StalePlanError
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS


def test_target_appearing_in_new_directories_is_named(ws: WS) -> None:
    ws.add_file("a.md", "a")
    ws.add_file("b.md", "b")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md", "b.md"], paths=[co])
    project = ws.project("demo")
    plan = project.plan()
    os.makedirs(f"{co}/.agents/memory")
    with open(f"{co}/.agents/memory/b.md", "w") as fh:
        fh.write("user's own b.md")
    before = snapshot(co, ws.root)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    diffs = info.value.differences
    assert any(d.startswith(f"{co}/.agents is now a directory") for d in diffs), diffs
    assert f"target {co}/.agents/memory/b.md is now a regular file (was nothing)" in diffs
    assert snapshot(co, ws.root) == before


def test_directory_swapped_for_a_symlink_stops_at_the_symlink(ws: WS, tmp_path: object) -> None:
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    os.makedirs(f"{co}/.agents/memory")
    project = ws.project("demo")
    plan = project.plan()
    outside = f"{ws.base}/outside"
    os.makedirs(f"{outside}/memory")
    os.rename(f"{co}/.agents", f"{ws.base}/moved")
    os.symlink(outside, f"{co}/.agents")
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any("/.agents is now a symlink" in d for d in info.value.differences)
    assert not any(d.startswith("target ") for d in info.value.differences)
    assert os.listdir(f"{outside}/memory") == []


def test_directory_mounted_over_after_planning_is_named(ws: WS) -> None:
    """The recorded identity of a directory under ``.agents/memory`` and the re-checked
    one come from the same call (``lstat``): unchanged, they agree — mounted over, they
    differ, and the difference says so."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    ws.add_file("team/a.md", "a")
    ws.add_file("team/b.md", "b")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["team/a.md", "team/b.md"], paths=[co])
    project = ws.project("demo")
    project.sync()
    os.unlink(f"{co}/.agents/memory/team/b.md")
    plan = project.plan()
    assert plan.summary()["create"] == 1
    team = f"{co}/.agents/memory/team"
    if subprocess.run(["mount", "-t", "tmpfs", "aikito-test", team]).returncode:
        pytest.skip("mount is not permitted here")
    try:
        before = snapshot(co, ws.root)
        with pytest.raises(StalePlanError) as info:
            project.execute(plan)
        assert f"{team} is now another directory (replaced, moved or mounted over since " \
               "planning) (was a directory)" in info.value.differences
        assert snapshot(co, ws.root) == before
    finally:
        subprocess.run(["umount", team], check=True)
    # Unchanged, the same plan verifies and applies.
    assert project.execute(plan).outcome == "applied"


def test_target_deeper_than_path_max_is_verified(ws: WS) -> None:
    """Verification reaches a target whose path is longer than ``PATH_MAX`` (relative to
    directory descriptors) and names its difference like any other."""
    parts = ["n" * 200] * 16
    rel = "/".join(parts) + "/deep.md"
    ws.add_file(rel, "deep")
    co = ws.checkout("/".join(["c" * 250] * 4))
    ws.write_config("demo", memory=[rel], paths=[co])
    project = ws.project("demo")
    project.sync()
    fd = os.open(f"{co}/.agents/memory", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
        os.unlink("deep.md", dir_fd=fd)
        plan = project.plan()
        assert plan.summary()["create"] == 1
        os.mkdir("deep.md", dir_fd=fd)  # the user's own directory appears
    finally:
        os.close(fd)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert info.value.differences == (
        f"target {co}/.agents/memory/{rel} is now a directory (was nothing)",)


def test_verification_never_looks_through_a_directory_swapped_for_a_symlink(ws: WS) -> None:
    """A stale link's directory (not an ancestor of any wanted target, so not among the
    recorded directories) is swapped for a symlink to a directory holding a hard link to
    that very link (same inode, same literal).  Looking through the symlink would find
    "the same" link; verification walks directories with ``O_NOFOLLOW`` and names it."""
    ws.add_file("old/a.md", "a")
    ws.add_file("b.md", "b")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["old/a.md", "b.md"], paths=[co])
    project = ws.project("demo")
    project.sync()
    ws.write_config("demo", memory=["b.md"], paths=[co])
    project = ws.project("demo")
    plan = project.plan()
    assert plan.summary()["unlink"] == 2  # old/a.md, then old/
    old = f"{co}/.agents/memory/old"
    elsewhere = f"{ws.base}/elsewhere"
    os.mkdir(elsewhere)
    os.link(f"{old}/a.md", f"{elsewhere}/a.md", follow_symlinks=False)
    os.rename(old, f"{co}/old.moved")
    os.symlink(elsewhere, old)
    before = snapshot(co, ws.root, elsewhere)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert f"target {old}/a.md is now nothing (was a symlink to " \
           f"'{ws.root}/memory/old/a.md')" in info.value.differences
    assert info.value.message.startswith("the plan is stale")  # found before any write
    assert snapshot(co, ws.root, elsewhere) == before


def test_a_plan_without_writes_executed_later_is_verified_too(ws: WS) -> None:
    """[E2] (NOOP targets included): ``Project.execute`` of a plan made earlier re-checks
    even a plan with nothing to write — a NOOP target replaced since is a stale plan, not
    "unchanged"."""
    ws.add_file("a.md", "a")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    project = ws.project("demo")
    project.sync()
    plan = project.plan()
    assert {op.action.value for op in plan.operations} == {"NOOP"}
    target = f"{co}/.agents/memory/a.md"
    os.unlink(target)
    with open(target, "w") as fh:
        fh.write("user's own a.md")
    before = snapshot(co, ws.root)
    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert info.value.differences == (
        f"target {target} is now a regular file (was a symlink to '{ws.root}/memory/a.md')",)
    assert snapshot(co, ws.root) == before
