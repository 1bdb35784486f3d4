"""[H2] adopt never removes the only copy, on real directories and real bind mounts: the
workspace at ``<checkout>/.agents``, ``<ws>/memory/team`` bind-mounted at the target (as a
dev container mounts a volume), a mount inside the target's tree, a hard link to the
destination — each refused with exit 4 in the dry run and the real run, the workspace
byte- and inode-identical afterwards.  Two distinct identical copies are still replaced."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aikito_mem.commands.adopt import distinct
from aikito_mem.errors import AdoptUnsafe
from aikito_mem.world.observe import mount_points
from tests.helpers import mounts
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS


def adopt_json(ws: str | Path, target: str | Path, *args: str) -> tuple[int, dict[str, Any]]:
    res = invoke("--workspace", str(ws), "adopt", str(target), "--json", *args, catch=True)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, one_json(res.stdout)


def refused(ws: str | Path, target: str | Path, code: str, *watch: str | Path) -> None:
    """Dry run and real run: exit 4, ``code``, nothing changed under ``watch``."""
    before = snapshot(*watch)
    for args in (("--dry-run",), ()):
        rc, doc = adopt_json(ws, target, *args)
        assert rc == 4, doc
        assert doc["outcome"] == "refused" and doc["error"]["code"] == f"adopt.{code}", doc
        assert "nothing was changed" in doc["error"]["message"]
        assert doc["content_at"] == str(target)
    assert changed(before, snapshot(*watch)) == set()


@pytest.fixture
def team(ws: WS) -> tuple[WS, str]:
    """``<ws>/memory/team`` with two files and a sub-directory; project ``demo`` lists
    ``team`` for the checkout ``<base>/co/co``, which holds a real ``.agents/memory``."""
    ws.add_file("team/a.md", "a\n")
    ws.add_file("team/sub/b.md", "b\n")
    co = ws.checkout("co")
    os.makedirs(f"{co}/.agents/memory")
    ws.write_config("demo", memory=["team"], paths=[co])
    return ws, co


# --------------------------------------------------------------------------- bind mounts


def test_a_bind_mount_of_the_workspace_memory_at_the_target(team: tuple[WS, str]) -> None:
    """The issue's dev container: ``<ws>/memory/team`` mounted at the target.  Before, the
    "identical copy" was itself and adopt removed it, whole directories included."""
    ws, co = team
    target = f"{co}/.agents/memory/team"
    with mounts.bind(ws.memory_path("team"), target):
        refused(ws.root, target, "mount_point", ws.root)
        refused(ws.root, f"{target}/a.md", "mount_point", ws.root)
        assert target in (mount_points() or ())  # still mounted, untouched
    assert Path(ws.memory_path("team/sub/b.md")).read_text() == "b\n"


def test_a_bind_mount_inside_the_target_tree(team: tuple[WS, str]) -> None:
    """``team/`` is a real copy, but ``team/sub`` is the workspace's ``sub`` mounted: the
    replace of an identical copy would have removed the workspace's files through it."""
    ws, co = team
    target = Path(co, ".agents/memory/team")
    (target / "sub").mkdir(parents=True)
    (target / "a.md").write_text("a\n")
    with mounts.bind(ws.memory_path("team/sub"), target / "sub"):
        refused(ws.root, target, "mount_point", ws.root, target)


def test_agents_memory_bind_mounted_from_the_workspace(team: tuple[WS, str]) -> None:
    ws, co = team
    with mounts.bind(f"{ws.root}/memory", f"{co}/.agents/memory"):
        refused(ws.root, f"{co}/.agents/memory/team", "in_workspace", ws.root)


# --------------------------------------------------------------------------- no mount needed


def test_the_workspace_at_the_checkout_s_agents(tmp_path: Path) -> None:
    """``aikito init CO/.agents``: the checkout's runtime tree is the workspace, so every
    entry of ``CO/.agents/memory`` is the workspace's own."""
    co = tmp_path / "CO"
    ws = co / ".agents"
    (ws / "memory" / "team").mkdir(parents=True)
    (ws / "memory" / "team" / "a.md").write_text("a\n")
    (ws / "projects" / "demo").mkdir(parents=True)
    (ws / "projects" / "demo" / "agent.toml").write_text(
        f'paths = [{json.dumps(str(co))}]\nmemory = ["team"]\n')
    refused(ws, ws / "memory" / "team", "in_workspace", tmp_path)
    refused(ws, ws / "memory" / "team" / "a.md", "in_workspace", tmp_path)


def test_agents_memory_as_a_symlink_into_the_workspace(team: tuple[WS, str]) -> None:
    ws, co = team
    os.rmdir(f"{co}/.agents/memory")
    os.symlink(f"{ws.root}/memory", f"{co}/.agents/memory")
    refused(ws.root, f"{co}/.agents/memory/team", "in_workspace", ws.base)


def test_a_target_inside_the_workspace_named_directly(team: tuple[WS, str]) -> None:
    ws, _co = team
    refused(ws.root, ws.memory_path("team"), "in_workspace", ws.base)


def test_a_hard_link_to_the_destination_is_the_same_object(ws: WS) -> None:
    ws.add_file("g.md", "g\n")
    co = ws.checkout("co")
    os.makedirs(f"{co}/.agents/memory")
    os.link(ws.memory_path("g.md"), f"{co}/.agents/memory/g.md")
    ws.write_config("demo", memory=[], paths=[co])
    refused(ws.root, f"{co}/.agents/memory/g.md", "same_object", ws.base)
    assert os.path.samefile(ws.memory_path("g.md"), f"{co}/.agents/memory/g.md")


def test_a_target_that_contains_the_destination(tmp_path: Path) -> None:
    """One inside the other: never reachable through a checkout [H1] accepts, refused all
    the same."""
    target = tmp_path / "x"
    destination = target / "ws" / "memory" / "x"
    destination.mkdir(parents=True)
    with pytest.raises(AdoptUnsafe) as info:
        distinct.distinct_from_destination(str(target), os.lstat(target), str(destination))
    assert info.value.code == "adopt.same_object" and info.value.exit_code == 4
    other = tmp_path / "y"
    other.mkdir()
    distinct.distinct_from_destination(str(other), os.lstat(other), str(destination))


def test_two_distinct_identical_copies_are_still_replaced(team: tuple[WS, str]) -> None:
    ws, co = team
    target = Path(co, ".agents/memory/team")
    (target / "sub").mkdir(parents=True)
    (target / "a.md").write_text("a\n")
    (target / "sub" / "b.md").write_text("b\n")
    workspace = snapshot(ws.root)
    rc, doc = adopt_json(ws.root, target)
    assert rc == 0 and doc["method"] == "replace", doc
    assert os.readlink(target) == ws.memory_path("team")
    assert changed(workspace, snapshot(ws.root)) == set()
