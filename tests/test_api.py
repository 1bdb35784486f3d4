"""``Project.prepare(agent, path=None)`` — one test per clause of [A3] (INV-MEM-12)."""

from __future__ import annotations

import fcntl
import inspect
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import aikito_mem.api as api_mod
import aikito_mem.executor.execute as execute_mod
from aikito_mem import Project, ProjectPrepareConflictError
from aikito_mem.api import PreparedProject
from aikito_mem.errors import ConfigError, ConflictError
from aikito_mem.model import Action, Operation, Status
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

REFS = ["top.md", "team/a.md", "glossary"]


def build(ws: WS, *, checkouts: tuple[str, ...] = ("main",), offline: bool = False) -> list[str]:
    ws.add_file("top.md", "top\n")
    ws.add_file("team/a.md", "a\n")
    ws.add_file("glossary/terms.md", "terms\n")
    ws.add_notes("demo")
    cos = [ws.checkout(name) for name in checkouts]
    for co in cos:
        Path(co, "README.md").write_text(f"foreign {co}\n")
    paths = [*cos, *([f"{ws.base}/gone"] if offline else [])]
    ws.write_config("demo", memory=REFS, paths=paths)
    return cos


def assert_linked(ws: WS, co: str) -> None:
    base = f"{co}/.agents/memory"
    for ref in REFS:
        assert os.readlink(f"{base}/{ref}") == ws.memory_path(ref)
    assert os.readlink(f"{base}/notes") == ws.notes_path("demo")


# --------------------------------------------------------------------------- returns


def test_returns_a_prepared_project(ws: WS) -> None:
    (co,) = build(ws)
    prepared = ws.project("demo").prepare("claude")
    assert isinstance(prepared, PreparedProject)
    assert prepared.project == "demo"
    assert prepared.agent == "claude"
    assert prepared.checkout == co
    assert prepared.result.outcome == "applied"
    assert prepared.result.success
    assert set(prepared.result.statuses) == {Status.APPLIED}
    assert_linked(ws, co)
    again = ws.project("demo").prepare("claude")
    assert again.result.outcome == "unchanged"
    assert {op.action for op in again.result.plan.operations} == {Action.NOOP}


# --------------------------------------------------------------------------- the lock


def _lock_is_held(path: str) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_plans_and_executes_under_the_checkout_lock(
    ws: WS, monkeypatch: pytest.MonkeyPatch
) -> None:
    (co,) = build(ws)
    seen: dict[str, list[bool]] = {"plan": [], "write": []}
    real_plan = api_mod.plan_project

    def spy_plan(*args: Any, **kwargs: Any) -> Any:
        seen["plan"].append(_lock_is_held(co))
        return real_plan(*args, **kwargs)

    def hook(op: Operation) -> None:
        seen["write"].append(_lock_is_held(co))

    monkeypatch.setattr(api_mod, "plan_project", spy_plan)
    monkeypatch.setattr(execute_mod, "before_write", hook)
    ws.project("demo").prepare("claude")
    assert seen["plan"] == [True]
    assert seen["write"] == [True] * 4
    assert not _lock_is_held(co)  # released afterwards


def test_waits_for_a_lock_held_elsewhere(ws: WS) -> None:
    (co,) = build(ws)
    fd = os.open(co, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    done: list[PreparedProject] = []
    project = ws.project("demo")
    thread = threading.Thread(target=lambda: done.append(project.prepare("claude")))
    try:
        thread.start()
        time.sleep(0.4)
        assert not done
        assert not os.path.lexists(f"{co}/.agents")  # nothing written without the lock
    finally:
        os.close(fd)
    thread.join(timeout=30)
    assert done and done[0].result.outcome == "applied"
    assert_linked(ws, co)


# --------------------------------------------------------------------------- path=None


def test_path_none_uses_the_single_active_checkout(ws: WS) -> None:
    (co,) = build(ws, offline=True)
    prepared = ws.project("demo").prepare("claude")
    assert prepared.checkout == co
    assert not os.path.lexists(f"{ws.base}/gone")  # an offline checkout is never created
    assert_linked(ws, co)


def test_path_none_without_an_active_checkout_is_a_config_error(ws: WS) -> None:
    build(ws, checkouts=())
    ws.write_config("demo", memory=REFS, paths=[f"{ws.base}/gone", f"{ws.base}/gone2"])
    before = snapshot(ws.base)
    with pytest.raises(ConfigError) as info:
        ws.project("demo").prepare("claude")
    assert info.value.exit_code == 4
    assert "no active checkout" in info.value.message
    assert snapshot(ws.base) == before


def test_path_none_with_several_active_checkouts_lists_them(ws: WS) -> None:
    one, two = build(ws, checkouts=("one", "two"))
    before = snapshot(ws.base)
    with pytest.raises(ConfigError) as info:
        ws.project("demo").prepare("claude")
    assert one in info.value.message and two in info.value.message
    assert snapshot(ws.base) == before


def test_explicit_path_chooses_among_several(ws: WS) -> None:
    one, two = build(ws, checkouts=("one", "two"))
    untouched = snapshot(one)
    readme = snapshot(f"{two}/README.md")
    prepared = ws.project("demo").prepare("claude", path=two)
    assert prepared.checkout == two
    assert prepared.result.plan.checkouts[0].path == two
    assert len(prepared.result.plan.checkouts) == 1
    assert snapshot(one) == untouched
    assert snapshot(f"{two}/README.md") == readme
    assert_linked(ws, two)


# --------------------------------------------------------------------------- no force


def test_takes_no_force_argument() -> None:
    sig = inspect.signature(Project.prepare)
    assert list(sig.parameters) == ["self", "agent", "path"]
    assert sig.parameters["path"].default is None
    assert all(p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
               for p in sig.parameters.values())


def test_force_is_rejected(ws: WS) -> None:
    build(ws)
    with pytest.raises(TypeError):
        ws.project("demo").prepare("claude", force=True)  # type: ignore[call-arg]


# --------------------------------------------------------------------------- never registers


def test_never_registers_an_unregistered_path(ws: WS) -> None:
    build(ws)
    config = Path(ws.config_path("demo"))
    raw = config.read_bytes()
    before = snapshot(ws.root)
    extra = ws.checkout("unregistered")
    prepared = ws.project("demo").prepare("claude", path=extra)
    assert prepared.checkout == extra
    assert prepared.result.registered is False
    assert prepared.result.plan.register is None
    assert config.read_bytes() == raw
    assert snapshot(ws.root) == before
    assert_linked(ws, extra)


# --------------------------------------------------------------------------- footprint


def test_touches_nothing_outside_the_checkout_runtime_tree(ws: WS) -> None:
    one, two = build(ws, checkouts=("one", "two"), offline=True)
    # A stale owned link in the *other* checkout: a sync would unlink it, prepare must not.
    os.makedirs(f"{two}/.agents/memory")
    os.symlink(ws.memory_path("old.md"), f"{two}/.agents/memory/old.md")
    Path(one, "src").mkdir()
    Path(one, "src/x.py").write_text("x\n")
    home = os.environ["HOME"]
    outside = snapshot(ws.base, home)
    ws.project("demo").prepare("claude", path=one)
    after = snapshot(ws.base, home)
    assert not os.path.lexists(f"{ws.base}/gone")
    changed = {k for k in set(outside) | set(after) if outside.get(k) != after.get(k)}
    # Only the checkout's own runtime tree (and the directories holding it) changed.
    allowed = {f"{ws.base}/co/one", f"{one}/.agents"}
    assert all(k in allowed or k.startswith(f"{one}/.agents/") for k in changed), changed
    assert os.readlink(f"{two}/.agents/memory/old.md") == ws.memory_path("old.md")
    assert_linked(ws, one)


def test_never_widens_permissions(ws: WS) -> None:
    (co,) = build(ws)
    os.makedirs(f"{co}/.agents/memory", mode=0o700)
    os.chmod(f"{co}/.agents", 0o700)
    os.chmod(f"{co}/.agents/memory", 0o700)
    ws.project("demo").prepare("claude")
    assert stat.S_IMODE(os.lstat(f"{co}/.agents").st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(f"{co}/.agents/memory").st_mode) == 0o700
    assert_linked(ws, co)


def test_prints_nothing(ws: WS, capfd: pytest.CaptureFixture[str]) -> None:
    (co,) = build(ws)
    ws.project("demo").prepare("claude")
    ws.project("demo").prepare("claude")
    Path(co, ".agents/memory/top.md").unlink()
    Path(co, ".agents/memory/top.md").write_text("conflict")
    with pytest.raises(ProjectPrepareConflictError):
        ws.project("demo").prepare("claude")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


# --------------------------------------------------------------------------- conflicts


def test_conflicts_raise_with_project_and_conflicts(ws: WS) -> None:
    (co,) = build(ws)
    os.makedirs(f"{co}/.agents/memory/glossary")  # a real directory where a link goes
    Path(co, ".agents/memory/top.md").write_text("mine\n")
    before = snapshot(*ws.roots())
    with pytest.raises(ProjectPrepareConflictError) as info:
        ws.project("demo").prepare("claude")
    exc = info.value
    assert isinstance(exc, ConflictError)
    assert exc.exit_code == 1
    assert exc.project == "demo"
    paths = sorted(c.path for c in exc.conflicts)
    assert paths == [f"{co}/.agents/memory/glossary", f"{co}/.agents/memory/top.md"]
    for c in exc.conflicts:
        assert c.reason and "expected" in c.reason
        assert c.path in exc.message
    assert snapshot(*ws.roots()) == before


def test_a_conflict_is_a_prepare_conflict_also_named_by_the_api(ws: WS) -> None:
    """Each conflict is a :class:`PrepareConflict` of prepare's room, still reachable as
    ``aikito_mem.api.PrepareConflict`` where it was declared first ([A3], [§12])."""
    import aikito_mem.api as api_mod
    from aikito_mem.prepare import PrepareConflict

    (co,) = build(ws)
    Path(co, ".agents/memory").mkdir(parents=True)
    Path(co, ".agents/memory/top.md").write_text("mine\n")
    with pytest.raises(ProjectPrepareConflictError) as info:
        ws.project("demo").prepare("claude")
    (conflict,) = info.value.conflicts
    assert isinstance(conflict, PrepareConflict)
    assert conflict.segment == "memory"
    assert api_mod.PrepareConflict is PrepareConflict
    with pytest.raises(AttributeError):
        _ = api_mod.NoSuchName  # type: ignore[attr-defined]


def test_missing_source_raises_and_writes_nothing(ws: WS) -> None:
    (co,) = build(ws)
    os.unlink(ws.memory_path("team/a.md"))
    before = snapshot(ws.base)
    with pytest.raises(ProjectPrepareConflictError) as info:
        ws.project("demo").prepare("claude")
    (conflict,) = info.value.conflicts
    assert conflict.path == f"{co}/.agents/memory/team/a.md"
    assert "does not exist" in conflict.reason
    assert snapshot(ws.base) == before
    assert not os.path.lexists(f"{co}/.agents")


# --------------------------------------------------------------------------- agents/


def test_agent_registry_requires_the_agent_file(ws: WS) -> None:
    (co,) = build(ws)
    os.makedirs(f"{ws.root}/agents")
    Path(ws.root, "agents/claude.toml").write_text("")
    before = snapshot(ws.base)
    with pytest.raises(ConfigError) as info:
        ws.project("demo").prepare("codex")
    assert f"{ws.root}/agents/codex.toml" in info.value.message
    assert snapshot(ws.base) == before
    prepared = ws.project("demo").prepare("claude")
    assert prepared.agent == "claude"
    assert_linked(ws, co)


def test_agent_registry_entry_must_be_a_file(ws: WS) -> None:
    build(ws)
    os.makedirs(f"{ws.root}/agents/claude.toml")
    with pytest.raises(ConfigError):
        ws.project("demo").prepare("claude")


def test_without_agent_registry_any_agent_name_is_accepted(ws: WS) -> None:
    (co,) = build(ws)
    assert ws.project("demo").prepare("whoever").agent == "whoever"
    assert_linked(ws, co)


@pytest.mark.parametrize("bad", ["", "a/b", "..", "."])
def test_agent_name_must_be_a_single_file_name(ws: WS, bad: str) -> None:
    build(ws)
    with pytest.raises(ConfigError):
        ws.project("demo").prepare(bad)


def test_prepared_project_is_named_where_it_always_was() -> None:
    """[A3]: ``PreparedProject`` lives in Project.prepare's room (a sync never builds the
    class, [§12]); the package root and ``aikito_mem.api`` still name it."""
    import aikito_mem
    import aikito_mem.api as api
    from aikito_mem import prepare

    assert aikito_mem.PreparedProject is api.PreparedProject is prepare.PreparedProject
    assert api.PrepareConflict is prepare.PrepareConflict
