"""The executor on real temporary directories ([E4]–[E6], [O3]/[O4], [P1]/[P2]).

Every test scatters foreign files around the checkout (and inside ``.agents`` and
``.agents/memory``) and proves afterwards that they are byte- and inode-identical.
Failures are injected by wrapping ``os.symlink`` / ``os.unlink`` / ``os.mkdir`` as the
writer sees them (``aikito_mem.executor.writer.os``), never by mocking the filesystem.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import aikito_mem.executor.execute as execute_mod
import aikito_mem.executor.writer as writer_mod
from aikito_mem import Project
from aikito_mem.cli import cli
from aikito_mem.errors import ExecutionError, StalePlanError
from aikito_mem.model import Action, Status
from tests.helpers.snapshots import Entry, snapshot
from tests.helpers.workspace import WS

# --------------------------------------------------------------------------- helpers

def diff(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    keys = sorted(set(before) | set(after))
    return [k for k in keys if before.get(k) != after.get(k)]


FOREIGN = {
    "README.md": b"# the project\n",
    "src/main.py": b"print('hi')\n",
    ".git/HEAD": b"ref: refs/heads/main\n",
    ".agents/settings.json": b'{"keep": true}\n',
    ".agents/memory/.DS_Store": b"\x00\x01binary",
    ".agents/memory/mine.txt": b"my own note\n",
}


def scatter(co: str) -> dict[str, Entry]:
    """Write the foreign files into ``co``; return their snapshot."""
    for rel, data in FOREIGN.items():
        path = Path(co, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    # A foreign symlink too (pointing outside), never to be touched.
    os.symlink("/etc/hostname", f"{co}/.agents/memory/foreign-link")
    return foreign_snapshot(co)


def foreign_snapshot(co: str) -> dict[str, Entry]:
    snap = snapshot(co)
    keep = {f"{co}/{rel}" for rel in FOREIGN} | {f"{co}/.agents/memory/foreign-link"}
    return {k: v for k, v in snap.items() if k in keep}


def assert_foreign_intact(co: str, before: dict[str, Entry]) -> None:
    after = foreign_snapshot(co)
    assert after == before
    for rel, data in FOREIGN.items():
        assert Path(co, rel).read_bytes() == data


def build(ws: WS, *, memory: list[str] | None = None, legacy_notes: bool = True) -> str:
    """A workspace with file, directory and nested references and project notes; one
    checkout ``co/main`` registered for project ``demo``."""
    ws.add_file("top.md", "top\n")
    ws.add_file("team/a.md", "a\n")
    ws.add_file("team/b.md", "b\n")
    ws.add_dir("glossary")
    ws.add_file("glossary/terms.md", "terms\n")
    ws.add_file("decisions/adr/0001.md", "adr\n")
    ws.add_notes("demo", legacy=legacy_notes)
    co = ws.checkout("main")
    ws.write_config(
        "demo",
        memory=memory if memory is not None else
        ["top.md", "team/a.md", "glossary", "decisions/adr/0001.md"],
        paths=[co],
    )
    return co


def links(co: str) -> dict[str, str]:
    """Every symlink under ``co/.agents/memory`` → its literal."""
    base = f"{co}/.agents/memory"
    out = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                out[os.path.relpath(path, base)] = os.readlink(path)
    return out


def run_cli(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


# --------------------------------------------------------------------------- creation


def test_sync_creates_links_with_exact_literals_and_real_directories(ws: WS) -> None:
    co = build(ws)
    foreign = scatter(co)
    result = ws.project("demo").sync()
    assert result.outcome == "applied"
    assert all(s is Status.APPLIED for s in result.statuses)
    assert links(co) == {
        "top.md": f"{ws.root}/memory/top.md",
        "team/a.md": f"{ws.root}/memory/team/a.md",
        "glossary": f"{ws.root}/memory/glossary",
        "decisions/adr/0001.md": f"{ws.root}/memory/decisions/adr/0001.md",
        "notes": f"{ws.root}/memory/demo/notes",
        "foreign-link": "/etc/hostname",
    }
    for rel in (".agents", ".agents/memory", ".agents/memory/team",
                ".agents/memory/decisions", ".agents/memory/decisions/adr"):
        st = os.lstat(f"{co}/{rel}")
        assert stat.S_ISDIR(st.st_mode), rel
    # The links resolve to the sources (the engine never copies anything).
    assert Path(co, ".agents/memory/team/a.md").read_text() == "a\n"
    assert Path(co, ".agents/memory/notes/note.md").read_text() == "a note\n"
    assert_foreign_intact(co, foreign)


def test_fresh_checkout_gets_agents_and_memory_as_real_directories(ws: WS) -> None:
    co = build(ws, memory=["top.md"])
    Path(co, "README.md").write_bytes(b"x")
    before = snapshot(f"{co}/README.md")
    ws.project("demo").sync()
    assert stat.S_ISDIR(os.lstat(f"{co}/.agents").st_mode)
    assert stat.S_ISDIR(os.lstat(f"{co}/.agents/memory").st_mode)
    assert os.readlink(f"{co}/.agents/memory/top.md") == f"{ws.root}/memory/top.md"
    assert snapshot(f"{co}/README.md") == before


def test_literal_uses_the_physical_workspace_root(ws: WS, tmp_path: Path) -> None:
    co = build(ws, memory=["top.md"])
    alias = tmp_path / "ws-alias"
    alias.symlink_to(ws.root)
    Project.load("demo", workspace=str(alias)).sync()
    assert os.readlink(f"{co}/.agents/memory/top.md") == f"{ws.root}/memory/top.md"


# --------------------------------------------------------------------------- stale links


def test_stale_owned_links_are_unlinked_and_emptied_directories_pruned(ws: WS) -> None:
    co = build(ws, memory=["top.md", "team/a.md", "team/b.md", "decisions/adr/0001.md"])
    foreign = scatter(co)
    project = ws.project("demo")
    project.sync()
    # A foreign file in a directory the engine made keeps that directory alive.
    Path(co, ".agents/memory/decisions/keep.txt").write_bytes(b"keep")
    keep = snapshot(f"{co}/.agents/memory/decisions/keep.txt")
    ws.write_config("demo", memory=["top.md"], paths=[co])
    plan = ws.project("demo").plan()
    unlinks = sorted(
        (op.target[len(co) + 1:], op.entry) for op in plan.operations
        if op.action is Action.UNLINK
    )
    assert unlinks == [
        (".agents/memory/decisions/adr", "directory"),
        (".agents/memory/decisions/adr/0001.md", "link"),
        (".agents/memory/team", "directory"),
        (".agents/memory/team/a.md", "link"),
        (".agents/memory/team/b.md", "link"),
    ]
    result = ws.project("demo").execute(plan)
    assert result.outcome == "applied"
    assert not os.path.lexists(f"{co}/.agents/memory/team")
    assert not os.path.lexists(f"{co}/.agents/memory/decisions/adr")
    assert stat.S_ISDIR(os.lstat(f"{co}/.agents/memory/decisions").st_mode)
    assert snapshot(f"{co}/.agents/memory/decisions/keep.txt") == keep
    assert links(co) == {
        "top.md": f"{ws.root}/memory/top.md",
        "notes": f"{ws.root}/memory/demo/notes",
        "foreign-link": "/etc/hostname",
    }
    assert_foreign_intact(co, foreign)


def test_relative_owned_link_is_recognised_and_unlinked(ws: WS) -> None:
    co = build(ws, memory=["top.md"])
    ws.project("demo").sync()
    base = f"{co}/.agents/memory"
    rel = os.path.relpath(f"{ws.root}/memory/glossary", base)
    os.symlink(rel, f"{base}/glossary")
    result = ws.project("demo").sync()
    assert result.outcome == "applied"
    assert not os.path.lexists(f"{base}/glossary")


def test_legacy_notes_link_is_migrated_to_current(ws: WS) -> None:
    co = build(ws, memory=["top.md"], legacy_notes=True)
    foreign = scatter(co)
    ws.project("demo").sync()
    target = f"{co}/.agents/memory/notes"
    legacy = f"{ws.root}/memory/demo/notes"
    current = f"{ws.root}/projects/demo/memory/notes"
    assert os.readlink(target) == legacy
    ws.add_notes("demo", legacy=False)
    plan = ws.project("demo").plan()
    notes_ops = [(op.action, op.source) for op in plan.operations if op.target == target]
    assert notes_ops == [(Action.UNLINK, legacy), (Action.CREATE, current)]
    result = ws.project("demo").execute(plan)
    assert result.outcome == "applied"
    assert os.readlink(target) == current
    # Idempotent from there on; the legacy directory is left alone.
    again = ws.project("demo").plan()
    assert {op.action for op in again.operations} == {Action.NOOP}
    assert Path(legacy, "note.md").read_text() == "a note\n"
    assert_foreign_intact(co, foreign)


# --------------------------------------------------------------------------- [E6]

_AUDIT: list[tuple[str, tuple[Any, ...]]] | None = None
_HOOKED = False
_WRITE_EVENTS = {
    "os.mkdir", "os.symlink", "os.remove", "os.rmdir", "os.rename", "os.link",
    "os.chmod", "os.chown", "os.utime", "os.truncate", "os.chflags", "os.mkfifo",
    "os.mknod", "shutil.rmtree", "shutil.copyfile", "os.setxattr", "os.removexattr",
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _AUDIT is None:
        return
    if event in _WRITE_EVENTS:
        _AUDIT.append((event, args))
    elif event == "open" and len(args) >= 3:
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        ):
            _AUDIT.append((event, args))


@contextmanager
def audit_writes() -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    global _AUDIT, _HOOKED
    if not _HOOKED:
        sys.addaudithook(_hook)
        _HOOKED = True
    events: list[tuple[str, tuple[Any, ...]]] = []
    _AUDIT = events
    try:
        yield events
    finally:
        _AUDIT = None


def test_audit_hook_sees_writes() -> None:
    """The instrument works: a real mkdir/symlink is recorded."""
    import tempfile

    with tempfile.TemporaryDirectory() as d, audit_writes() as events:
        os.mkdir(f"{d}/x")
        os.symlink("x", f"{d}/y", dir_fd=None)
    assert [e for e, _ in events][:2] == ["os.mkdir", "os.symlink"]


def test_second_sync_performs_no_mutating_syscall(ws: WS) -> None:
    co = build(ws)
    scatter(co)
    home = os.environ["HOME"]
    ws.project("demo").sync()
    before = snapshot(ws.base, home)
    project = ws.project("demo")
    with audit_writes() as events:
        result = project.sync()
    assert events == []
    assert result.outcome == "unchanged"
    assert {op.action for op in result.plan.operations} == {Action.NOOP}
    assert set(result.statuses) == {Status.UNCHANGED}
    after = snapshot(ws.base, home)
    # Same entries (no lock, cache or state file), same inodes, literals, mtime_ns and
    # ctime_ns for the links and for every directory holding them.
    assert diff(before, after) == []
    # And via the command line too: exit 0, outcome unchanged, nothing new anywhere.
    with audit_writes() as events:
        code, doc = run_cli("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert events == []
    assert (code, doc["outcome"]) == (0, "unchanged")
    assert diff(before, snapshot(ws.base, home)) == []


# --------------------------------------------------------------------------- failures

ERRNOS = [errno.ENOSPC, errno.EROFS, errno.EIO, errno.EACCES]


def failing(name: str, k: int, err: int, *, effect: bool = False) -> Callable[..., Any]:
    """Wrap ``os.<name>`` so that its ``k``-th call (1-based) raises ``err`` (after
    performing the real call when ``effect``: the syscall's effect is unknown)."""
    real = getattr(os, name)
    calls = {"n": 0}

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == k:
            if effect:
                real(*args, **kwargs)
            raise OSError(err, os.strerror(err))
        return real(*args, **kwargs)

    wrapper.calls = calls  # type: ignore[attr-defined]
    return wrapper


def writes(plan_ops: list[Any], co: str) -> list[int]:
    """Indices of the writing operations, in [E4] order (unlinks, prunes, links)."""
    idx = list(range(len(plan_ops)))
    unlinks = [i for i in idx if plan_ops[i].action is Action.UNLINK
               and plan_ops[i].entry == "link"]
    prunes = sorted((i for i in idx if plan_ops[i].action is Action.UNLINK
                     and plan_ops[i].entry == "directory"),
                    key=lambda i: -plan_ops[i].target.count("/"))
    creates = [i for i in idx if plan_ops[i].action is Action.CREATE]
    return unlinks + prunes + creates


def assert_statuses(statuses: list[str], order: list[int], k: int, failed: str) -> None:
    for n, i in enumerate(order, start=1):
        want = "applied" if n < k else failed if n == k else "not_applied"
        assert statuses[i] == want, (n, i, statuses)


def assert_converges(ws: WS, co: str, foreign: dict[str, Entry]) -> None:
    again = ws.project("demo").sync()
    assert again.outcome in ("applied", "unchanged")
    final = ws.project("demo").sync()
    assert final.outcome == "unchanged"
    assert {op.action for op in final.plan.operations} == {Action.NOOP}
    assert_foreign_intact(co, foreign)


@pytest.mark.parametrize("err", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_symlink_failure_stops_and_reports_per_op_status(
    ws: WS, monkeypatch: pytest.MonkeyPatch, err: int, k: int
) -> None:
    co = build(ws)
    foreign = scatter(co)
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    assert len(order) == 5  # top.md, team/a.md, glossary, adr, notes
    monkeypatch.setattr(writer_mod.os, "symlink",
                        failing("symlink", k, err, effect=err == errno.EIO))
    with pytest.raises(ExecutionError) as info:
        ws.project("demo").execute(plan)
    exc = info.value
    assert exc.exit_code == 5
    assert errno.errorcode[err] in exc.message
    statuses = [s.value for s in exc.result.statuses]
    failed = "unknown" if err == errno.EIO else "not_applied"
    assert_statuses(statuses, order, k, failed)
    assert exc.result.outcome == "failed"
    memory = next(seg for seg in exc.result.segments if seg.name == "memory")
    assert (memory.success, memory.outcome) == (False, "failed")
    # What the statuses say is what the disk says.
    for n, i in enumerate(order, start=1):
        op = plan.operations[i]
        present = os.path.islink(op.target)
        assert present == (n < k or (n == k and err == errno.EIO)), op.target
    monkeypatch.undo()
    assert_converges(ws, co, foreign)


@pytest.mark.parametrize("err", ERRNOS, ids=errno.errorcode.get)
def test_failure_via_cli_json_exit_5(
    ws: WS, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    co = build(ws)
    foreign = scatter(co)
    monkeypatch.setattr(writer_mod.os, "symlink", failing("symlink", 2, err))
    result = CliRunner().invoke(
        cli, ["--workspace", ws.root, "sync", "project", "demo", "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 5
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "failed"
    assert doc["exit_code"] == 5
    assert doc["segments"]["memory"]["success"] is False
    assert doc["error"]["code"] == "sync.failed"
    assert "Traceback" not in result.output
    writes_ = [op for op in doc["operations"] if op["action"] in ("CREATE", "UNLINK")]
    statuses = [op["status"] for op in writes_]
    # The CLI plan has no unlinks here: writes are the CREATEs in target order.
    assert statuses[0] == "applied"
    assert statuses[1] == ("unknown" if err == errno.EIO else "not_applied")
    assert set(statuses[2:]) == {"not_applied"}
    assert "error" in writes_[1] and errno.errorcode[err] in writes_[1]["error"]
    monkeypatch.undo()
    code, doc = run_cli("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert (code, doc["outcome"]) == (0, "applied")
    code, doc = run_cli("--workspace", ws.root, "sync", "project", "demo", "--json")
    assert (code, doc["outcome"]) == (0, "unchanged")
    assert {op["action"] for op in doc["operations"]} == {"NOOP"}
    assert_foreign_intact(co, foreign)


@pytest.mark.parametrize("err", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("k", [1, 2])
def test_unlink_failure(ws: WS, monkeypatch: pytest.MonkeyPatch, err: int, k: int) -> None:
    co = build(ws, memory=["top.md", "team/a.md", "team/b.md", "glossary"])
    foreign = scatter(co)
    ws.project("demo").sync()
    ws.write_config("demo", memory=["top.md", "decisions/adr/0001.md"], paths=[co])
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    kinds = [(plan.operations[i].action, plan.operations[i].entry) for i in order]
    assert kinds == [(Action.UNLINK, "link")] * 3 + [(Action.UNLINK, "directory")] + \
        [(Action.CREATE, "link")]
    monkeypatch.setattr(writer_mod.os, "unlink",
                        failing("unlink", k, err, effect=err == errno.EIO))
    with pytest.raises(ExecutionError) as info:
        ws.project("demo").execute(plan)
    statuses = [s.value for s in info.value.result.statuses]
    assert_statuses(statuses, order, k, "unknown" if err == errno.EIO else "not_applied")
    assert not os.path.lexists(f"{co}/.agents/memory/decisions")  # nothing created
    monkeypatch.undo()
    assert_converges(ws, co, foreign)
    assert not os.path.lexists(f"{co}/.agents/memory/team")


@pytest.mark.parametrize("err", ERRNOS, ids=errno.errorcode.get)
@pytest.mark.parametrize("k", [1, 3])
def test_mkdir_failure(ws: WS, monkeypatch: pytest.MonkeyPatch, err: int, k: int) -> None:
    co = build(ws, memory=["decisions/adr/0001.md", "team/a.md"])
    Path(co, "README.md").write_bytes(b"readme")
    readme = snapshot(f"{co}/README.md")
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    targets = [plan.operations[i].target[len(co) + 1:] for i in order]
    assert targets == [".agents/memory/decisions/adr/0001.md", ".agents/memory/notes",
                       ".agents/memory/team/a.md"]
    # mkdir calls: .agents, .agents/memory, decisions, decisions/adr, (notes: none), team
    k_to_op = {1: 1, 3: 1}
    monkeypatch.setattr(writer_mod.os, "mkdir", failing("mkdir", k, err))
    with pytest.raises(ExecutionError) as info:
        ws.project("demo").execute(plan)
    statuses = [s.value for s in info.value.result.statuses]
    assert_statuses(statuses, order, k_to_op[k], "unknown" if err == errno.EIO else "not_applied")
    assert links(co) == {}
    monkeypatch.undo()
    again = ws.project("demo").sync()
    assert again.outcome == "applied"
    assert ws.project("demo").sync().outcome == "unchanged"
    assert snapshot(f"{co}/README.md") == readme
    for rel in (".agents", ".agents/memory", ".agents/memory/decisions/adr"):
        assert stat.S_ISDIR(os.lstat(f"{co}/{rel}").st_mode)


def test_failure_of_the_last_create_keeps_earlier_ones(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    co = build(ws)
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    monkeypatch.setattr(writer_mod.os, "symlink", failing("symlink", len(order), errno.ENOSPC))
    with pytest.raises(ExecutionError) as info:
        ws.project("demo").execute(plan)
    statuses = [s.value for s in info.value.result.statuses]
    assert_statuses(statuses, order, len(order), "not_applied")
    monkeypatch.undo()
    result = ws.project("demo").sync()
    assert result.plan.summary()["create"] == 1
    assert result.plan.summary()["noop"] == len(order) - 1


# --------------------------------------------------------------------------- reshaping


def test_directory_link_replaced_by_nested_links(ws: WS) -> None:
    """Old ref ``team`` (a link) → new ref ``team/a.md``: [O4] makes the link a CONFLICT
    for ``team/a.md`` (nothing written; the remedy says the link is aikito's and safe to
    remove); once the user removes it, the sync creates the directory and the link."""
    from aikito_mem.errors import ConflictError

    co = build(ws, memory=["team"])
    foreign = scatter(co)
    ws.project("demo").sync()
    assert os.readlink(f"{co}/.agents/memory/team") == ws.memory_path("team")
    ws.write_config("demo", memory=["team/a.md"], paths=[co])
    before = snapshot(co, ws.root)
    with pytest.raises(ConflictError) as info:
        ws.project("demo").sync()
    [conflict] = [op for op in info.value.conflicts if op.resource == "team/a.md"]
    assert conflict.remedy is not None and "aikito's link" in conflict.remedy
    assert snapshot(co, ws.root) == before
    os.unlink(f"{co}/.agents/memory/team")
    assert ws.project("demo").sync().outcome == "applied"
    assert stat.S_ISDIR(os.lstat(f"{co}/.agents/memory/team").st_mode)
    assert os.readlink(f"{co}/.agents/memory/team/a.md") == ws.memory_path("team/a.md")
    assert ws.project("demo").sync().outcome == "unchanged"
    assert_foreign_intact(co, foreign)


def test_nested_links_replaced_by_a_directory_link(ws: WS) -> None:
    """Old refs ``team/a.md``, ``team/b.md`` → new ref ``team``: the real directory at the
    desired target is a CONFLICT ([P1]); once the user removes it, the sync links it."""
    import shutil

    from aikito_mem.errors import ConflictError

    co = build(ws, memory=["team/a.md", "team/b.md"])
    foreign = scatter(co)
    ws.project("demo").sync()
    ws.write_config("demo", memory=["team"], paths=[co])
    before = snapshot(co, ws.root)
    with pytest.raises(ConflictError):
        ws.project("demo").sync()
    assert snapshot(co, ws.root) == before
    shutil.rmtree(f"{co}/.agents/memory/team")
    assert ws.project("demo").sync().outcome == "applied"
    assert os.readlink(f"{co}/.agents/memory/team") == ws.memory_path("team")
    assert ws.project("demo").sync().outcome == "unchanged"
    assert_foreign_intact(co, foreign)


def test_nested_prune_goes_deepest_first_up_to_memory(ws: WS) -> None:
    co = build(ws, memory=["decisions/adr/0001.md"])
    ws.project("demo").sync()
    ws.write_config("demo", memory=[], paths=[co])
    result = ws.project("demo").sync()
    assert result.outcome == "applied"
    assert sorted(os.listdir(f"{co}/.agents/memory")) == ["notes"]
    assert stat.S_ISDIR(os.lstat(f"{co}/.agents").st_mode)


def test_foreign_entries_are_preserved_with_a_warning(ws: WS) -> None:
    co = build(ws, memory=["top.md"])
    foreign = scatter(co)
    os.mkdir(f"{co}/.agents/memory/empty")
    result = ws.project("demo").sync()
    paths = {f.path for f in result.plan.findings if f.severity == "warning"}
    base = f"{co}/.agents/memory"
    assert {f"{base}/.DS_Store", f"{base}/mine.txt", f"{base}/foreign-link",
            f"{base}/empty"} <= paths
    assert os.path.isdir(f"{base}/empty")
    assert_foreign_intact(co, foreign)


# --------------------------------------------------------------------------- mid-way drift


def _hook_at(n: int, action: Callable[[], None]) -> Callable[[Any], None]:
    calls = {"n": 0}

    def hook(op: Any) -> None:
        calls["n"] += 1
        if calls["n"] == n:
            action()

    return hook


def test_target_appearing_mid_way_stops_with_exit_3(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    co = build(ws, memory=["top.md", "glossary"])
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    third = plan.operations[order[2]].target
    monkeypatch.setattr(execute_mod, "before_write",
                        _hook_at(2, lambda: Path(third).write_text("raced\n")))
    result = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 3
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "stale"
    statuses = [op["status"] for op in doc["operations"]]
    assert [statuses[i] for i in order] == ["applied", "applied", "not_applied"]
    assert Path(third).read_text() == "raced\n"  # never overwritten


def test_parent_swapped_for_symlink_mid_way_cannot_redirect_writes(
    ws: WS, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    co = build(ws, memory=["glossary", "team/a.md", "team/b.md"])
    ws.project("demo").sync()
    for rel in ("glossary", "team/a.md", "team/b.md"):
        os.unlink(f"{co}/.agents/memory/{rel}")
    outside = tmp_path / "outside"
    outside.mkdir()

    def swap() -> None:
        os.rename(f"{co}/.agents/memory/team", f"{co}/team.moved")
        os.symlink(str(outside), f"{co}/.agents/memory/team")

    plan = ws.project("demo").plan()
    assert plan.summary()["create"] == 3
    # Swapped before the writer opened team/: the O_NOFOLLOW open refuses it → drift.
    monkeypatch.setattr(execute_mod, "before_write", _hook_at(1, swap))
    with pytest.raises(StalePlanError) as info:
        ws.project("demo").execute(plan)
    statuses = [s.value for s in info.value.result.statuses]
    order = writes(list(plan.operations), co)
    assert [statuses[i] for i in order] == ["applied", "not_applied", "not_applied"]
    assert list(outside.iterdir()) == []  # nothing written through the swapped parent
    # Swapped after the writer opened team/ (just before the first link): the write in
    # flight goes through the held descriptor (now co/team.moved, still inside the
    # checkout) and the move is then detected as drift — never the symlink to outside.
    os.unlink(f"{co}/.agents/memory/team")
    os.rename(f"{co}/team.moved", f"{co}/.agents/memory/team")
    plan = ws.project("demo").plan()
    assert plan.summary()["create"] == 2
    monkeypatch.setattr(execute_mod, "before_write", _hook_at(1, swap))
    with contextlib.suppress(StalePlanError):
        ws.project("demo").execute(plan)
    assert list(outside.iterdir()) == []
    assert set(os.listdir(f"{co}/team.moved")) <= {"a.md", "b.md"}
    assert "a.md" in os.listdir(f"{co}/team.moved")


def test_sigterm_finishes_the_operation_in_flight_then_stops(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    co = build(ws)
    foreign = scatter(co)
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    monkeypatch.setattr(execute_mod, "before_write",
                        _hook_at(2, lambda: os.kill(os.getpid(), signal.SIGTERM)))
    result = CliRunner().invoke(cli, ["--workspace", ws.root, "sync", "project", "demo",
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 143
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "interrupted"
    statuses = [op["status"] for op in doc["operations"]]
    assert [statuses[i] for i in order] == ["applied", "applied"] + ["not_applied"] * 3
    monkeypatch.undo()
    assert_converges(ws, co, foreign)


# --------------------------------------------------------------------------- signals [E5]
#
# The engine installs the SIGINT/SIGTERM handlers of aikito_mem.signals for every API call
# that can write (Project.sync / execute / prepare, execute()), whether or not a command
# line installed them first.  Waiting for the lock, planning and verification end at once
# on a signal; from the registration on, a signal is checked before each write.


def _registering_plan(ws: WS) -> tuple[Any, str, bytes]:
    """A plan for an explicit, unregistered checkout: it registers, then links."""
    ws.add_file("a.md", "a\n")
    ws.add_file("b.md", "b\n")
    registered = ws.checkout("registered")
    co = ws.checkout("new")
    config = ws.write_config("demo", memory=["a.md", "b.md"], paths=[registered])
    project = ws.project("demo")
    plan = project.plan(path=co)
    assert plan.register == co and plan.summary()["create"] == 2
    return plan, co, Path(config).read_bytes()


def test_signal_while_waiting_for_the_lock_ends_the_run_before_anything_is_written(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal arrives while another process holds the lock, which then frees: the run
    stops at once — never waits out the timeout, never verifies, registers or links."""
    import fcntl

    import aikito_mem.executor.lock as lock_mod
    from aikito_mem.errors import InterruptedError_

    plan, co, config = _registering_plan(ws)
    holder = os.open(co, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    verified: list[object] = []
    import aikito_mem.executor.verify as verify_mod

    real_verify = verify_mod.verify

    def sleep(seconds: float) -> None:
        if holder in open_fds:
            open_fds.remove(holder)
            os.close(holder)  # the lock frees …
            os.kill(os.getpid(), signal.SIGTERM)  # … and the signal arrives

    open_fds = [holder]
    monkeypatch.setattr(lock_mod.time, "sleep", sleep)
    monkeypatch.setattr(verify_mod, "verify",
                        lambda *a, **k: (verified.append(a), real_verify(*a, **k))[1])
    before = snapshot(ws.base)
    try:
        with pytest.raises(InterruptedError_) as info:
            ws.project("demo").execute(plan, lock_timeout=60)
    finally:
        if open_fds:
            os.close(holder)
    assert info.value.exit_code == 143
    assert info.value.result.outcome == "interrupted"
    assert set(info.value.result.statuses) == {Status.NOT_APPLIED}
    assert verified == []
    assert snapshot(ws.base) == before
    assert Path(ws.config_path("demo")).read_bytes() == config


def test_signal_after_verification_stops_before_the_registration(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aikito_mem.errors import InterruptedError_

    plan, _co, config = _registering_plan(ws)
    real = execute_mod._checked

    def checked(*args: Any) -> None:
        real(*args)
        os.kill(os.getpid(), signal.SIGINT)  # arrives after the interruptible region

    monkeypatch.setattr(execute_mod, "_checked", checked)
    before = snapshot(ws.base)
    with pytest.raises(InterruptedError_) as info:
        ws.project("demo").execute(plan)
    assert info.value.exit_code == 130
    assert not info.value.result.registered
    assert set(info.value.result.statuses) == {Status.NOT_APPLIED}
    assert Path(ws.config_path("demo")).read_bytes() == config
    assert snapshot(ws.base) == before


def test_signal_while_planning_a_sync_stops_at_once(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planning is interruptible: the second checkout is never observed."""
    import aikito_mem.world.checkouts as checkouts_mod
    from aikito_mem.errors import InterruptedError_

    ws.add_file("a.md", "a\n")
    cos = [ws.checkout("one"), ws.checkout("two")]
    ws.write_config("demo", memory=["a.md"], paths=cos)
    observed: list[str] = []
    real = checkouts_mod.observe

    def observe(slot: Any, observer: Any) -> Any:
        observed.append(slot.path)
        if len(observed) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(slot, observer)

    monkeypatch.setattr(checkouts_mod, "observe", observe)
    before = snapshot(ws.base)
    with pytest.raises(InterruptedError_) as info:
        ws.project("demo").sync()
    assert info.value.exit_code == 143
    assert observed == cos[:1]
    assert snapshot(ws.base) == before


@pytest.mark.parametrize("call", ["sync", "execute", "prepare", "execute_function"])
def test_every_writing_api_call_installs_the_handlers_for_its_duration(
    ws: WS, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """From the lock wait and the planning (sync, prepare) to the last write."""
    import aikito_mem.world.checkouts as checkouts_mod
    from aikito_mem import signals

    ws.add_file("a.md", "a\n")
    co = ws.checkout("co")
    ws.write_config("demo", memory=["a.md"], paths=[co])
    project = ws.project("demo")
    plan = project.plan()
    seen: list[tuple[str, object, object]] = []

    def record(moment: str) -> None:
        seen.append((moment, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))

    real_observe = checkouts_mod.observe
    monkeypatch.setattr(checkouts_mod, "observe",
                        lambda slot, obs: (record("plan"), real_observe(slot, obs))[1])
    monkeypatch.setattr(execute_mod, "before_write", lambda op: record("write"))
    outside = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    if call == "sync":
        project.sync()
    elif call == "execute":
        project.execute(plan)
    elif call == "prepare":
        project.prepare("claude")
    else:
        execute_mod.execute(plan)
    moments = ["plan", "write"] if call in ("sync", "prepare") else ["write"]
    assert seen == [(m, signals._handler, signals._handler) for m in moments]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == outside


def test_signal_during_verification_stops_at_once(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verification is interruptible: the second checkout is never looked at."""
    import aikito_mem.executor.verify as verify_mod
    from aikito_mem.errors import InterruptedError_

    ws.add_file("a.md", "a\n")
    cos = [ws.checkout("one"), ws.checkout("two")]
    ws.write_config("demo", memory=["a.md"], paths=cos)
    plan = ws.project("demo").plan()
    verified: list[str] = []
    real = verify_mod._verify_checkout

    def verify_checkout(co: Any, fd: int, ops: Any) -> list[str]:
        verified.append(co.path)
        if len(verified) == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        return real(co, fd, ops)

    monkeypatch.setattr(verify_mod, "_verify_checkout", verify_checkout)
    before = snapshot(ws.base)
    with pytest.raises(InterruptedError_) as info:
        ws.project("demo").execute(plan)
    assert info.value.exit_code == 143
    assert verified == cos[:1]
    assert snapshot(ws.base) == before


def test_the_operation_in_flight_is_finished_even_inside_an_interruptible_caller(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller that (wrongly) runs the engine inside an interruptible region cannot make a
    signal cut a write in half: the write loop only records it."""
    from aikito_mem import signals
    from aikito_mem.errors import InterruptedError_

    co = build(ws)
    plan = ws.project("demo").plan()
    order = writes(list(plan.operations), co)
    monkeypatch.setattr(execute_mod, "before_write",
                        _hook_at(2, lambda: os.kill(os.getpid(), signal.SIGTERM)))
    with signals.installed(), signals.interruptible(), \
            pytest.raises(InterruptedError_) as info:
        ws.project("demo").execute(plan)
    statuses = [s.value for s in info.value.result.statuses]
    assert [statuses[i] for i in order] == ["applied", "applied"] + ["not_applied"] * 3
    for i in order[:2]:
        assert os.path.islink(plan.operations[i].target)


# -- statuses and messages of a run blocked in part ([E8], §9) ---------------------------


def _memory_blocked(ws: WS) -> tuple[str, str]:
    """Skills has one link to create; memory a NOOP, a SKIP (an offline checkout) and a
    CONFLICT (the user's file at a target)."""
    ws.add_skill("review")
    ws.add_file("a.md", "a\n")
    ws.add_file("b.md", "b\n")
    co = ws.checkout("main")
    ws.write_config("demo", memory=["a.md", "b.md"], skills=["review"],
                    paths=[co, f"{ws.base}/unplugged"])
    os.makedirs(f"{co}/.agents/memory")
    os.symlink(ws.memory_path("a.md"), f"{co}/.agents/memory/a.md")
    Path(co, ".agents/memory/b.md").write_text("the user's b\n")
    return co, f"{ws.base}/unplugged"


def test_every_operation_of_a_blocked_segment_is_not_applied(ws: WS) -> None:
    """§9: NOOPs and SKIPs of a blocked segment too, whatever blocked it; the segment
    that proceeded keeps its own statuses."""
    from aikito_mem.errors import ConflictError

    co, _ = _memory_blocked(ws)
    with pytest.raises(ConflictError) as info:
        ws.project("demo").sync()
    result = info.value.result
    by_segment: dict[str, set[tuple[str, str]]] = {}
    for op, status in zip(result.plan.operations, result.statuses, strict=True):
        by_segment.setdefault(op.segment.value, set()).add((op.action.value, status.value))
    assert by_segment["memory"] == {("NOOP", "not_applied"), ("SKIP", "not_applied"),
                                    ("CONFLICT", "not_applied")}
    assert ("CREATE", "applied") in by_segment["skills"]
    assert os.readlink(f"{co}/.agents/skills/review") == f"{ws.root}/skills/review"
    message = info.value.message
    assert "nothing of it was written, the other segments were applied" in message
    assert message.count("written") == 1


def test_a_plan_refused_as_a_whole_says_nothing_was_written_once(ws: WS) -> None:
    from aikito_mem.errors import ConflictError

    ws.add_file("b.md", "b\n")
    co = ws.checkout("main")
    ws.write_config("demo", memory=["b.md"], paths=[co])
    os.makedirs(f"{co}/.agents/memory")
    Path(co, ".agents/memory/b.md").write_text("the user's b\n")
    with pytest.raises(ConflictError) as info:
        ws.project("demo").sync()
    assert "; nothing was written — " in info.value.message
    assert info.value.message.count("written") == 1
