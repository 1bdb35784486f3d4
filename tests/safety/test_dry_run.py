"""[E7]: a dry run — ``Project.plan()`` and ``aikito sync project --dry-run/--check`` —
writes nothing anywhere and takes no lock.

Two independent witnesses: before/after snapshots of the workspace, the checkouts and
HOME (:mod:`tests.helpers.snapshots`: lstat facts, link literals, content hashes), and a
``sys.addaudithook`` hook that records every write-like event while a dry run runs.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from aikito_mem import Project
from aikito_mem.cli import cli
from aikito_mem.model import Action, CheckoutState
from tests.helpers.audit import RECORDER, Recorder
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS


@pytest.fixture
def no_writes() -> Iterator[Callable[[], Any]]:
    """A context manager arming the recorder; the test fails on any write event."""
    from contextlib import contextmanager

    @contextmanager
    def armed() -> Iterator[Recorder]:
        RECORDER.events.clear()
        RECORDER.seen.clear()
        RECORDER.armed = True
        try:
            yield RECORDER
        finally:
            RECORDER.armed = False
        assert RECORDER.events == [], f"dry run wrote: {RECORDER.events}"

    yield armed
    RECORDER.armed = False


def test_audit_hook_is_live(tmp_path: Path, no_writes: Callable[[], Any]) -> None:
    """The witness works: it sees a real write."""
    RECORDER.events.clear()
    RECORDER.armed = True
    try:
        (tmp_path / "x").write_text("x")
        os.mkdir(tmp_path / "d")
        os.symlink("x", tmp_path / "l")
        os.unlink(tmp_path / "l")
        os.close(os.open(tmp_path / "y", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.close(os.open(tmp_path / "y", os.O_RDONLY))  # a read: not recorded
        os.replace(tmp_path / "y", tmp_path / "z")
        os.rmdir(tmp_path / "d")
        fd = os.open(tmp_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    finally:
        RECORDER.armed = False
    kinds = [e for e, _ in RECORDER.events]
    assert kinds == ["open", "os.mkdir", "os.symlink", "os.remove", "open", "os.rename",
                     "os.rmdir", "fcntl.flock"]
    RECORDER.events.clear()


# --------------------------------------------------------------------------- the world


class World:
    """A workspace with one project whose plan has every kind of operation."""

    def __init__(self, ws: WS) -> None:
        self.ws = Path(ws.root)
        self.home = Path(ws.home)
        self.co = Path(ws.checkout("main"))
        self.offline = ws.base / "offline-checkout"
        ws.add_file("team/a.md", "a\n")
        ws.add_file("linked.md", "l\n")
        ws.add_dir("glossary")
        os.makedirs(ws.notes_path("demo"))
        self.m = Path(ws.runtime(str(self.co)))
        self.m.mkdir(parents=True)
        (self.m / "linked.md").symlink_to(ws.memory_path("linked.md"))  # NOOP
        (self.m / "old.md").symlink_to(ws.memory_path("old.md"))  # stale → UNLINK
        (self.m / ".DS_Store").write_bytes(b"\0\0")  # foreign → warning
        ws.write_config("demo", memory=["team/a.md", "linked.md", "glossary"],
                        paths=[str(self.co), str(self.offline)])

    def add_conflict(self) -> None:
        (self.m / "glossary").mkdir()  # a real directory where a link should be

    def roots(self) -> tuple[Path, ...]:
        return (self.ws, self.co, self.offline, self.home)

    def invoke(self, *args: str) -> Any:
        return CliRunner().invoke(
            cli, ["--workspace", str(self.ws), "sync", "project", "demo", *args],
            catch_exceptions=False,
        )


@pytest.fixture
def world(ws: WS) -> World:
    return World(ws)


def test_world_has_every_kind_of_operation(world: World) -> None:
    world.add_conflict()
    plan = Project.load("demo", str(world.ws)).plan()
    actions = {op.action for op in plan.operations}
    assert actions == {Action.CREATE, Action.NOOP, Action.UNLINK, Action.CONFLICT, Action.SKIP}
    assert {c.state for c in plan.checkouts} == {CheckoutState.ACTIVE, CheckoutState.OFFLINE}
    assert any(f.code == "memory.foreign_entry" for f in plan.findings)


@pytest.mark.parametrize("conflict", [False, True], ids=["clean", "conflict"])
def test_api_plan_writes_nothing(
    world: World, no_writes: Callable[[], Any], conflict: bool
) -> None:
    if conflict:
        world.add_conflict()
    before = snapshot(*world.roots())
    with no_writes() as rec:
        project = Project.load("demo", str(world.ws))
        plan = project.plan()
        dry = project.dry_run()
    assert "os.scandir" in rec.seen  # the hook was armed while planning observed
    assert plan.blocked is conflict
    assert {op.action for op in plan.operations} >= {
        Action.CREATE, Action.NOOP, Action.UNLINK, Action.SKIP}
    assert dry.outcome == ("blocked" if conflict else "planned")
    assert snapshot(*world.roots()) == before


def test_api_plan_with_explicit_unregistered_path_writes_nothing(
    world: World, tmp_path: Path, no_writes: Callable[[], Any]
) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    extra.mkdir()
    before = snapshot(*world.roots(), extra)
    with no_writes():
        plan = Project.load("demo", str(world.ws)).plan(str(extra))
    assert plan.register == str(extra)
    assert snapshot(*world.roots(), extra) == before


@pytest.mark.parametrize(
    ("args", "conflict", "code", "outcome"),
    [
        (["--dry-run"], False, 0, "planned"),
        (["--dry-run"], True, 1, "blocked"),
        (["--check"], False, 7, "planned"),
        (["--check"], True, 1, "blocked"),
        (["--dry-run", "-v"], False, 0, "planned"),
    ],
)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_cli_dry_run_writes_nothing(
    world: World,
    no_writes: Callable[[], Any],
    args: list[str],
    conflict: bool,
    code: int,
    outcome: str,
    as_json: bool,
) -> None:
    if conflict:
        world.add_conflict()
    before = snapshot(*world.roots())
    with no_writes():
        result = world.invoke(*args, *(["--json"] if as_json else []))
    assert result.exit_code == code, result.output
    assert snapshot(*world.roots()) == before
    if as_json:
        doc = json.loads(result.stdout)
        assert doc["outcome"] == outcome
        assert doc["dry_run"] is True
        assert doc["exit_code"] == code
        assert {op["status"] for op in doc["operations"]} == {"planned"}
        assert {op["action"] for op in doc["operations"]} >= {"CREATE", "NOOP", "UNLINK", "SKIP"}
        assert ("CONFLICT" in {op["action"] for op in doc["operations"]}) is conflict
    else:
        # SPEC §9: text shows targets relative to the checkout, sources to the workspace.
        assert "  + .agents/memory/team/a.md -> memory/team/a.md\n" in result.stdout
        assert "  - .agents/memory/old.md\n" in result.stdout
        assert f"~ checkout offline: {world.offline}" in result.stdout


def test_cli_dry_run_with_explicit_path_does_not_register(
    world: World, tmp_path: Path, no_writes: Callable[[], Any]
) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    extra.mkdir()
    before = snapshot(*world.roots(), extra)
    with no_writes():
        result = world.invoke(str(extra), "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [c["path"] for c in doc["checkouts"]] == [str(extra)]
    assert snapshot(*world.roots(), extra) == before


def test_check_is_zero_when_in_sync_and_writes_nothing(
    world: World, no_writes: Callable[[], Any]
) -> None:
    real = world.invoke("--json")
    assert real.exit_code == 0, real.output
    assert json.loads(real.stdout)["outcome"] == "applied"
    before = snapshot(*world.roots())
    with no_writes():
        check = world.invoke("--check", "--json")
        text = world.invoke("--check")
    assert check.exit_code == 0, check.output
    doc = json.loads(check.stdout)
    assert doc["outcome"] == "unchanged"  # SPEC §9: --check with nothing pending
    assert doc["summary"]["create"] == doc["summary"]["unlink"] == 0
    assert text.exit_code == 0
    assert snapshot(*world.roots()) == before


def test_dry_run_prints_the_plan_the_real_run_executes(world: World) -> None:
    dry = json.loads(world.invoke("--dry-run", "--json").stdout)
    real = json.loads(world.invoke("--json").stdout)
    strip = [{k: v for k, v in op.items() if k != "status"} for op in dry["operations"]]
    assert strip == [{k: v for k, v in op.items() if k != "status"}
                     for op in real["operations"]]
    assert real["outcome"] == "applied"
    assert os.readlink(world.m / "team/a.md") == f"{world.ws}/memory/team/a.md"
    assert not os.path.lexists(world.m / "old.md")
    assert (world.m / ".DS_Store").read_bytes() == b"\0\0"


def test_dry_run_takes_no_lock(world: World) -> None:
    """A dry run succeeds while another process holds the checkout lock ([E3])."""
    import subprocess

    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY);"
         "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)",
         str(world.co)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        result = world.invoke("--dry-run", "--lock-timeout", "0", "--json")
        assert result.exit_code == 0, result.output
        busy = world.invoke("--lock-timeout", "0", "--json")
        assert busy.exit_code == 6
        assert json.loads(busy.stdout)["outcome"] == "busy"
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("how", ["AIKITO_DIR", "pointer file"])
def test_discovered_workspace_dry_run_writes_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch, no_writes: Callable[[], Any], how: str
) -> None:
    if how == "AIKITO_DIR":
        monkeypatch.setenv("AIKITO_DIR", str(world.ws))
    else:
        pointer = world.home / ".config/aikito/workspace"
        pointer.parent.mkdir(parents=True)
        pointer.write_text(f"{world.ws}\n")
    before = snapshot(*world.roots())
    with no_writes():
        result = CliRunner().invoke(cli, ["sync", "project", "demo", "--check", "--json"],
                                    catch_exceptions=False)
    assert result.exit_code == 7, result.output
    assert json.loads(result.stdout)["workspace"] == str(world.ws)
    assert snapshot(*world.roots()) == before
