"""States that must converge ([E5], [E6]): a mount point inside ``.agents/memory``, and a
runtime tree deeper than ``PATH_MAX`` (which the executor itself creates through directory
descriptors).  Each is synced, then synced again: the second run exits 0 (or the same
stable conflict) and changes nothing.

Mounts need root and ``mount(8)``: those tests skip with the reason elsewhere and always
unmount in a ``finally``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner

from aikito_mem.cli import cli
from aikito_mem.model import Action
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

PATH_MAX = os.pathconf("/", "PC_PATH_MAX")


def sync(ws: WS, *extra: str) -> tuple[int, dict[str, Any]]:
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                   "--json", *extra])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, json.loads(res.stdout)


# ---------------------------------------------------------------------------- mount points


@contextmanager
def mounted(*args: str) -> Iterator[None]:
    """``mount ARGS…`` for the duration (the last argument is the mount point)."""
    if os.geteuid() != 0:
        pytest.skip("mounting needs root")
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"mount is not permitted here: {proc.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", args[-1]], check=True)


def tmpfs(path: str) -> Any:
    return mounted("-t", "tmpfs", "aikito-test", path)


def bind(source: str, path: str) -> Any:
    return mounted("--bind", source, path)


def world(ws: WS, co: str) -> dict[str, Any]:
    """Everything: the workspace, the checkout (the mounts inside it included)."""
    return snapshot(ws.root, co)


def linked(ws: WS, memory: list[str]) -> str:
    for ref in memory:
        ws.add_file(ref, ref)
    co = ws.checkout("co")
    ws.write_config("demo", memory=memory, paths=[co])
    code, _ = sync(ws)
    assert code == 0
    return co


@pytest.mark.parametrize("kind", ["tmpfs", "bind"])
def test_foreign_mount_point_is_preserved_never_entered_and_converges(
    ws: WS, kind: str, tmp_path: Any
) -> None:
    """A filesystem mounted at a path of its own under ``.agents/memory`` is a foreign
    entry: preserved with a warning, never descended into — not even to unlink what looks
    like aikito's own link inside it — never pruned, and the run exits 0 every time."""
    co = linked(ws, ["a.md"])
    mount_point = f"{co}/.agents/memory/cache"
    os.mkdir(mount_point)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with (tmpfs(mount_point) if kind == "tmpfs" else bind(str(elsewhere), mount_point)):
        # Inside the mount: what would be aikito's link for a removed reference, and a file.
        os.symlink(f"{ws.root}/memory/cache/x.md", f"{mount_point}/x.md")
        with open(f"{mount_point}/keep.txt", "w") as fh:
            fh.write("not yours")
        before = world(ws, co)
        for _ in range(2):
            code, doc = sync(ws)
            assert code == 0, doc
            assert doc["outcome"] == "unchanged"
            assert [op["action"] for op in doc["operations"]] == ["NOOP"]
            found = [f for f in doc["findings"] if f["path"] == mount_point]
            assert len(found) == 1 and "mount point" in found[0]["message"]
            assert not any(f["path"].startswith(mount_point + "/") for f in doc["findings"])
            assert world(ws, co) == before
        assert sync(ws, "--check")[0] == 0


def test_mount_point_at_an_intermediate_directory_is_a_stable_conflict(ws: WS) -> None:
    """A mount where a nested reference needs a real directory ([O4]): a conflict naming
    the mount and the remedy — the same on every run, nothing written — never an endless
    stale plan.  Unmounted, the next run converges."""
    co = linked(ws, ["team/a.md", "b.md"])
    os.unlink(f"{co}/.agents/memory/team/a.md")
    team = f"{co}/.agents/memory/team"
    with tmpfs(team):
        before = world(ws, co)
        for _ in range(2):
            code, doc = sync(ws)
            assert code == 1, doc
            (conflict,) = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
            assert conflict["target"] == f"{team}/a.md"
            assert f"{team} is a mount point" in conflict["reason"]
            assert doc["error"]["code"] == "sync.conflict"
            assert world(ws, co) == before
    code, doc = sync(ws)
    assert (code, doc["outcome"]) == (0, "applied")
    assert sync(ws)[1]["outcome"] == "unchanged"


def test_mount_point_at_a_target_is_a_conflict(ws: WS) -> None:
    ws.add_dir("glossary")
    co = linked(ws, ["a.md"])
    ws.write_config("demo", memory=["a.md", "glossary"], paths=[co])
    target = f"{co}/.agents/memory/glossary"
    os.mkdir(target)
    with tmpfs(target):
        before = world(ws, co)
        for _ in range(2):
            code, doc = sync(ws)
            assert code == 1
            (conflict,) = [op for op in doc["operations"] if op["action"] == "CONFLICT"]
            assert conflict["target"] == target
            assert "found a mount point" in conflict["reason"]
            assert world(ws, co) == before


def test_directory_holding_a_mount_point_is_never_pruned(ws: WS) -> None:
    """A stale link is unlinked; its directory, which also holds a mount, stays."""
    co = linked(ws, ["old/a.md", "b.md"])
    ws.write_config("demo", memory=["b.md"], paths=[co])
    cache = f"{co}/.agents/memory/old/cache"
    os.mkdir(cache)
    with tmpfs(cache):
        code, doc = sync(ws)
        assert code == 0, doc
        assert [(op["action"], op["target"]) for op in doc["operations"]
                if op["action"] == "UNLINK"] == [("UNLINK", f"{co}/.agents/memory/old/a.md")]
        assert os.path.ismount(cache)
        before = world(ws, co)
        code, doc = sync(ws)
        assert (code, doc["outcome"]) == (0, "unchanged")
        assert world(ws, co) == before


# ---------------------------------------------------------------------------- PATH_MAX

COMPONENT = "n" * 200


def deep(ws: WS) -> tuple[str, str]:
    """A checkout whose runtime target lies deeper than ``PATH_MAX`` (its source does not:
    a symlink literal is at most ``PATH_MAX - 1`` bytes)."""
    co = ws.checkout("/".join(["c" * 250] * 4))
    rel = "/".join([COMPONENT] * 16) + "/deep.md"
    source = ws.add_file(rel, "deep\n")
    assert len(source.encode()) < PATH_MAX
    assert len(f"{co}/.agents/memory/{rel}".encode()) > PATH_MAX
    ws.add_file("top.md", "top\n")
    ws.write_config("demo", memory=[rel, "top.md"], paths=[co])
    return co, rel


def fd_snapshot(root: str) -> dict[str, tuple[int, int, int, int, str]]:
    """Every entry under ``root`` by relative path, walked through directory descriptors
    (``tests.snapshots`` walks full paths, which fail past ``PATH_MAX``)."""
    out: dict[str, tuple[int, int, int, int, str]] = {}
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    stack: list[tuple[int, str]] = [(top, "")]
    while stack:
        fd, prefix = stack.pop()
        try:
            for name in sorted(os.listdir(fd)):
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                literal = os.readlink(name, dir_fd=fd) if stat.S_ISLNK(st.st_mode) else ""
                out[prefix + name] = (st.st_mode, st.st_ino, st.st_mtime_ns, st.st_ctime_ns,
                                      literal)
                if stat.S_ISDIR(st.st_mode):
                    sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                  dir_fd=fd)
                    stack.append((sub, prefix + name + "/"))
        finally:
            os.close(fd)
    return out


def deep_fd(co: str, rel: str) -> tuple[int, str]:
    """A descriptor of the directory holding ``rel`` under ``.agents/memory``, and the
    last name — reached one level at a time."""
    fd = os.open(f"{co}/.agents/memory", os.O_RDONLY | os.O_DIRECTORY)
    *dirs, name = rel.split("/")
    for part in dirs:
        sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        os.close(fd)
        fd = sub
    return fd, name


def test_tree_deeper_than_path_max_is_created_then_in_sync(ws: WS) -> None:
    co, rel = deep(ws)
    code, doc = sync(ws)
    assert (code, doc["outcome"]) == (0, "applied"), doc
    fd, name = deep_fd(co, rel)
    try:
        assert os.readlink(name, dir_fd=fd) == ws.memory_path(rel)
    finally:
        os.close(fd)
    before = fd_snapshot(co)
    for _ in range(2):
        code, doc = sync(ws)
        assert (code, doc["outcome"]) == (0, "unchanged"), doc
        assert {op["action"] for op in doc["operations"]} == {"NOOP"}
        assert doc["checkouts"][0]["state"] == "active"
        assert fd_snapshot(co) == before
    assert sync(ws, "--check")[0] == 0


def test_saved_plan_for_a_deep_tree_verifies_and_applies(ws: WS, tmp_path: Any) -> None:
    """Verification ([E2]) observes a deep target through directory descriptors too."""
    co, rel = deep(ws)
    assert sync(ws)[0] == 0
    fd, name = deep_fd(co, rel)
    try:
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
    planfile = str(tmp_path / "plan.toml")
    assert sync(ws, "--dry-run", "--out", planfile)[0] == 0
    res = CliRunner().invoke(cli, ["--workspace", ws.root, "apply", planfile, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["outcome"] == "applied"
    assert sync(ws)[1]["outcome"] == "unchanged"


def test_deep_stale_link_is_unlinked_and_its_directories_pruned(ws: WS) -> None:
    co, _rel = deep(ws)
    assert sync(ws)[0] == 0
    ws.write_config("demo", memory=["top.md"], paths=[co])
    project = ws.project("demo")
    plan = project.plan()
    unlinks = [op for op in plan.operations if op.action is Action.UNLINK]
    assert len(unlinks) == 1 + 16  # the link, then every directory it leaves empty
    assert project.execute(plan).outcome == "applied"
    assert os.listdir(f"{co}/.agents/memory") == ["top.md"]
    code, doc = sync(ws)
    assert (code, doc["outcome"]) == (0, "unchanged")


def test_mount_point_in_agents_skills_converges(ws) -> None:
    """[E5] in the skills segment: a filesystem mounted at `.agents/skills/<name>` (not a
    selected skill) is preserved and never makes a sync stale."""
    from tests.helpers.mounts import need_root, tmpfs

    need_root()
    ws.add_skill("alpha")
    co = ws.checkout("co")
    ws.write_config("demo", paths=[co], skills=["alpha"])
    ws.project("demo").sync()
    mnt = os.path.join(co, ".agents", "skills", "scratch")
    os.mkdir(mnt)
    with tmpfs(mnt):
        for _ in range(2):
            result = ws.project("demo").sync()
            assert result.outcome == "unchanged"
        assert os.path.ismount(mnt)
        assert os.readlink(os.path.join(co, ".agents", "skills", "alpha")) == \
            os.path.join(ws.root, "skills", "alpha")
