"""[E2]: verification names *every* difference — a target that appeared inside directories
that were themselves created after planning is named too."""

from __future__ import annotations

import os

import pytest

from aikito_mem.errors import StalePlanError
from tests.conftest import WS
from tests.snapshots import snapshot


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
