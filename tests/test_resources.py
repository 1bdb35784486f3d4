"""Resources and checkouts on a real filesystem: notes precedence ([S2]), shadowing ([S4]),
source safety ([S3]), offline and non-absolute checkouts ([K1]–[K3]), runtime-tree
conflicts ([O4]) and stale entries ([P2]) — planned, and where it matters synced for real.

Everything runs on real temporary directories; nothing is mocked.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from aikito_mem import Project
from aikito_mem.model import Action, CheckoutState, Plan, Status
from tests.helpers.workspace import WS, config_text

# --------------------------------------------------------------------------- helpers


@pytest.fixture
def root(ws: Path) -> Path:
    """The base directory of :class:`WS`, holding ``ws`` and ``co``."""
    return ws.parent


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The workspace root of a fresh :class:`WS` (as a :class:`Path`)."""
    return Path(WS(tmp_path).root)


@pytest.fixture
def co(root: Path) -> Path:
    """The checkout: the checkouts directory :class:`WS` made."""
    return root / "co"


def put(path: Path, text: str = "x\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project(
    ws: Path,
    memory: list[str] | None = None,
    paths: list[str | Path] | None = None,
    name: str = "demo",
) -> Path:
    return put(ws / "projects" / name / "agent.toml", config_text(memory, paths))


def plan_of(ws: Path, name: str = "demo") -> Plan:
    return Project.load(name, str(ws)).plan()


def ops_at(plan: Plan, target: Path | str) -> list:
    return [op for op in plan.operations if op.target == str(target)]


def one_op(plan: Plan, target: Path | str):
    found = ops_at(plan, target)
    assert len(found) == 1, (target, plan.operations)
    return found[0]


def mem(co: Path, rel: str = "") -> Path:
    return co / ".agents" / "memory" / rel if rel else co / ".agents" / "memory"


def sync(ws: Path, name: str = "demo"):
    return Project.load(name, str(ws)).sync()


# --------------------------------------------------------------------------- [S2] notes


def test_current_notes_win_over_legacy(ws: Path, co: Path) -> None:
    (ws / "projects/demo/memory/notes").mkdir(parents=True)
    (ws / "memory/demo/notes").mkdir(parents=True)
    project(ws, [], [co])
    plan = plan_of(ws)
    op = one_op(plan, mem(co, "notes"))
    assert op.action is Action.CREATE
    assert op.source == f"{ws}/projects/demo/memory/notes"
    assert plan.project_memory_exists is True
    assert plan.notes_location == "current"
    result = sync(ws)
    assert result.outcome == "applied"
    assert os.readlink(mem(co, "notes")) == f"{ws}/projects/demo/memory/notes"


def test_project_memory_root_without_notes_never_falls_back(ws: Path, co: Path) -> None:
    (ws / "projects/demo/memory").mkdir(parents=True)
    put(ws / "projects/demo/memory/other.md")  # not scanned (INV-MEM-04)
    (ws / "memory/demo/notes").mkdir(parents=True)
    put(ws / "memory/demo/notes/legacy.md")
    project(ws, [], [co])
    plan = plan_of(ws)
    assert plan.project_memory_exists is True
    assert plan.notes_source is None
    assert [op for op in plan.operations if op.resource == "notes"] == []
    assert not any("legacy" in (op.source or "") or "memory/demo" in (op.source or "")
                   for op in plan.operations)
    # What is recorded for verification is the current location, never the legacy one.
    recorded = {c.path for c in plan.sources}
    assert f"{ws}/memory/demo/notes" not in recorded
    assert f"{ws}/projects/demo/memory/notes" in recorded
    sync(ws)
    assert not os.path.lexists(mem(co, "notes"))


@pytest.mark.parametrize("kind", ["file", "broken symlink", "symlink to a dir"])
def test_project_memory_root_not_a_directory_is_a_notes_conflict(
    ws: Path, co: Path, root: Path, kind: str
) -> None:
    pm = ws / "projects/demo/memory"
    project(ws, [], [co])
    (ws / "memory/demo/notes").mkdir(parents=True)  # legacy: must not be used
    if kind == "file":
        put(pm)
    elif kind == "broken symlink":
        pm.symlink_to(root / "nowhere")
    else:
        (root / "elsewhere/notes").mkdir(parents=True)
        pm.symlink_to(root / "elsewhere")
    plan = plan_of(ws)
    op = one_op(plan, mem(co, "notes"))
    assert op.action is Action.CONFLICT
    assert str(pm) in op.reason
    assert op.source == f"{ws}/projects/demo/memory/notes"
    assert plan.blocked
    assert plan.project_memory_exists is True
    res = sync_blocked(ws)
    assert res == "blocked"
    assert not mem(co).exists()


def sync_blocked(ws: Path) -> str:
    from aikito_mem.errors import ConflictError

    with pytest.raises(ConflictError) as info:
        sync(ws)
    return info.value.outcome


def test_legacy_notes_used_when_project_memory_root_absent(ws: Path, co: Path) -> None:
    (ws / "memory/demo/notes").mkdir(parents=True)
    project(ws, [], [co])
    plan = plan_of(ws)
    assert plan.project_memory_exists is False
    assert plan.notes_location == "legacy"
    op = one_op(plan, mem(co, "notes"))
    assert op.action is Action.CREATE
    assert op.source == f"{ws}/memory/demo/notes"


def test_no_notes_anywhere_means_no_notes_op(ws: Path, co: Path) -> None:
    put(ws / "memory/g.md")
    project(ws, ["g.md"], [co])
    plan = plan_of(ws)
    assert plan.notes_source is None
    assert ops_at(plan, mem(co, "notes")) == []
    assert [op.resource for op in plan.operations] == ["g.md"]


def test_notes_that_are_a_file_conflict(ws: Path, co: Path) -> None:
    put(ws / "projects/demo/memory/notes")
    project(ws, [], [co])
    op = one_op(plan_of(ws), mem(co, "notes"))
    assert op.action is Action.CONFLICT
    assert "regular file" in op.reason


# --------------------------------------------------------------------------- [S4] shadowing


@pytest.mark.parametrize("ref", ["notes", "notes/x"])
def test_reference_shadowed_by_project_notes(ws: Path, co: Path, ref: str) -> None:
    (ws / "projects/demo/memory/notes").mkdir(parents=True)
    put(ws / "memory/notes/x")
    project(ws, [ref], [co])
    plan = plan_of(ws)
    skip = [op for op in plan.operations if op.action is Action.SKIP]
    assert len(skip) == 1
    assert skip[0].resource == ref
    assert skip[0].target == str(mem(co, ref))
    assert skip[0].reason == "shadowed by project notes"
    warnings = [f for f in plan.findings if f.code == "memory.shadowed"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert repr(ref) in warnings[0].message
    # The notes themselves still link.
    notes = [op for op in ops_at(plan, mem(co, "notes")) if op.action is not Action.SKIP]
    assert [(op.action, op.source) for op in notes] == [
        (Action.CREATE, f"{ws}/projects/demo/memory/notes")
    ]
    assert not plan.blocked


def test_reference_shadowed_even_by_unsafe_notes(ws: Path, co: Path) -> None:
    put(ws / "projects/demo/memory")  # project memory root is a file → unsafe notes
    put(ws / "memory/notes/x")
    project(ws, ["notes/x"], [co])
    plan = plan_of(ws)
    assert [op.action for op in plan.operations if op.resource == "notes/x"] == [Action.SKIP]
    assert any(f.code == "memory.shadowed" for f in plan.findings)
    assert [op.action for op in ops_at(plan, mem(co, "notes"))] == [Action.CONFLICT]


def test_reference_notes_is_ordinary_without_notes_resource(ws: Path, co: Path) -> None:
    (ws / "memory/notes").mkdir()
    put(ws / "memory/notes/a.md")
    project(ws, ["notes"], [co])
    plan = plan_of(ws)
    op = one_op(plan, mem(co, "notes"))
    assert op.action is Action.CREATE
    assert op.resource == "notes"
    assert op.source == f"{ws}/memory/notes"
    assert not any(f.code == "memory.shadowed" for f in plan.findings)


# --------------------------------------------------------------------------- [K2]/[K3]


def test_offline_checkout_skips_every_resource(ws: Path, co: Path, root: Path) -> None:
    put(ws / "memory/a.md")
    put(ws / "memory/team/b.md")
    (ws / "memory/demo/notes").mkdir(parents=True)
    gone = root / "gone"
    project(ws, ["a.md", "team/b.md"], [gone, co])
    plan = plan_of(ws)
    states = {c.path: c.state for c in plan.checkouts}
    assert states == {str(gone): CheckoutState.OFFLINE, str(co): CheckoutState.ACTIVE}
    offline = [op for op in plan.operations if op.checkout == str(gone)]
    assert sorted(op.resource for op in offline) == ["a.md", "notes", "team/b.md"]
    assert {op.action for op in offline} == {Action.SKIP}
    assert {op.rule for op in offline} == {"INV-MEM-08"}
    active = [op for op in plan.operations if op.checkout == str(co)]
    assert {op.action for op in active} == {Action.CREATE}
    result = sync(ws)
    assert result.outcome == "applied"
    assert not gone.exists()  # never created


@pytest.mark.parametrize("raw", ["D:/code/x", "code/x"])
def test_non_absolute_candidate_is_offline_never_resolved_against_cwd(
    ws: Path, co: Path, root: Path, monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    put(ws / "memory/a.md")
    project(ws, ["a.md"], [raw, co])
    here = root / "cwd"
    (here / raw).mkdir(parents=True)  # the relative path exists under the cwd
    monkeypatch.chdir(here)
    plan = plan_of(ws)
    first = plan.checkouts[0]
    assert first.state is CheckoutState.OFFLINE
    assert first.path == raw
    assert "not an absolute path on this system" in (first.reason or "")
    warns = [f for f in plan.findings if "not an absolute path on this system" in f.message]
    assert len(warns) == 1 and warns[0].severity == "warning"
    assert raw in warns[0].message
    assert not any(str(here) in op.target for op in plan.operations)
    sync(ws)
    assert os.listdir(here / raw) == []  # nothing written through the cwd
    assert os.readlink(mem(co, "a.md")) == f"{ws}/memory/a.md"


def test_candidate_that_is_a_regular_file_conflicts(ws: Path, co: Path, root: Path) -> None:
    put(ws / "memory/a.md")
    bogus = put(root / "afile")
    project(ws, ["a.md"], [bogus, co])
    plan = plan_of(ws)
    assert plan.checkouts[0].state is CheckoutState.INVALID
    op = one_op(plan, bogus)
    assert op.action is Action.CONFLICT
    assert "regular file" in op.reason
    assert plan.blocked
    assert sync_blocked(ws) == "blocked"
    assert not mem(co).exists()  # the active checkout is blocked too ([P3])


def test_duplicate_checkouts_by_physical_path(ws: Path, co: Path, root: Path) -> None:
    put(ws / "memory/a.md")
    alias = root / "alias"
    alias.symlink_to(co)
    project(ws, ["a.md"], [co, alias])
    plan = plan_of(ws)
    assert [(c.label, c.path) for c in plan.checkouts] == [("1", str(co))]
    assert len(plan.operations) == 1


def test_duplicate_through_symlink_listed_first_resolves_physically(
    ws: Path, co: Path, root: Path
) -> None:
    put(ws / "memory/a.md")
    alias = root / "alias"
    alias.symlink_to(co)
    project(ws, ["a.md"], [alias, co])
    plan = plan_of(ws)
    assert [(c.label, c.path) for c in plan.checkouts] == [("1", str(co))]


# --------------------------------------------------------------------------- [O4]


@pytest.mark.parametrize("rel", [".agents", ".agents/memory"])
@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_runtime_dirs_that_are_not_directories_conflict(
    ws: Path, co: Path, root: Path, rel: str, kind: str
) -> None:
    put(ws / "memory/a.md")
    project(ws, ["a.md"], [co])
    path = co / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = root / "elsewhere"
    (elsewhere / "memory").mkdir(parents=True)
    if kind == "symlink":
        path.symlink_to(elsewhere if rel == ".agents" else elsewhere / "memory")
    else:
        put(path)
    plan = plan_of(ws)
    assert plan.blocked
    (op,) = plan.conflicts
    assert op.target == str(path)
    assert str(path) in op.reason
    assert ("symlink" if kind == "symlink" else "regular file") in op.reason
    assert sync_blocked(ws) == "blocked"
    assert os.listdir(elsewhere / "memory") == []  # never written through


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_intermediate_that_is_not_a_directory_conflicts(
    ws: Path, co: Path, root: Path, kind: str
) -> None:
    put(ws / "memory/team/a.md")
    project(ws, ["team/a.md"], [co])
    team = mem(co, "team")
    team.parent.mkdir(parents=True)
    if kind == "file":
        put(team)
    else:
        (root / "foreign").mkdir()
        team.symlink_to(root / "foreign")
    plan = plan_of(ws)
    op = one_op(plan, mem(co, "team/a.md"))
    assert op.action is Action.CONFLICT
    assert str(team) in op.reason
    assert sync_blocked(ws) == "blocked"
    if kind == "symlink":
        assert os.listdir(root / "foreign") == []


def test_missing_intermediates_created_as_real_directories(ws: Path, co: Path) -> None:
    put(ws / "memory/team/a/b.md")
    project(ws, ["team/a/b.md"], [co])
    assert sync(ws).outcome == "applied"
    for rel in ("", "team", "team/a"):
        p = mem(co, rel)
        assert p.is_dir() and not p.is_symlink()
    assert os.readlink(mem(co, "team/a/b.md")) == f"{ws}/memory/team/a/b.md"


# --------------------------------------------------------------------------- [S3] sources


def test_escaping_source_file_symlink_conflicts(ws: Path, co: Path, root: Path) -> None:
    secret = put(root / "outside/secret.md")
    (ws / "memory/esc.md").symlink_to(secret)
    project(ws, ["esc.md"], [co])
    op = one_op(plan_of(ws), mem(co, "esc.md"))
    assert op.action is Action.CONFLICT
    assert op.rule == "INV-MEM-02"
    assert "leaves" in op.reason


def test_escaping_intermediate_directory_symlink_conflicts(
    ws: Path, co: Path, root: Path
) -> None:
    put(root / "outside/f.md")
    (ws / "memory/dirlink").symlink_to(root / "outside")
    project(ws, ["dirlink/f.md"], [co])
    op = one_op(plan_of(ws), mem(co, "dirlink/f.md"))
    assert op.action is Action.CONFLICT
    assert op.rule == "INV-MEM-02"
    assert str(ws / "memory/dirlink") in op.reason
    assert sync_blocked(ws) == "blocked"


def test_relative_symlink_climbing_out_of_memory_conflicts(ws: Path, co: Path) -> None:
    put(ws / "projects/demo/private.md")  # inside the workspace but outside memory/
    (ws / "memory/up.md").symlink_to("../projects/demo/private.md")
    project(ws, ["up.md"], [co])
    op = one_op(plan_of(ws), mem(co, "up.md"))
    assert op.action is Action.CONFLICT and op.rule == "INV-MEM-02"


def test_internal_source_symlinks_are_fine(ws: Path, co: Path) -> None:
    put(ws / "memory/team/a.md")
    (ws / "memory/alias.md").symlink_to("team/a.md")
    (ws / "memory/teamlink").symlink_to(ws / "memory/team")
    project(ws, ["alias.md", "teamlink/a.md"], [co])
    plan = plan_of(ws)
    assert not plan.blocked
    assert [op.action for op in plan.operations] == [Action.CREATE, Action.CREATE]
    assert sync(ws).outcome == "applied"
    # The link literal is the canonical path, not the resolved one ([S1]).
    assert os.readlink(mem(co, "alias.md")) == f"{ws}/memory/alias.md"
    assert os.readlink(mem(co, "teamlink/a.md")) == f"{ws}/memory/teamlink/a.md"


def test_broken_source_symlink_conflicts(ws: Path, co: Path) -> None:
    (ws / "memory/broken.md").symlink_to(ws / "memory/nothing-here.md")
    project(ws, ["broken.md"], [co])
    op = one_op(plan_of(ws), mem(co, "broken.md"))
    assert op.action is Action.CONFLICT
    assert "broken" in op.reason


@pytest.fixture
def alarm() -> Iterator[None]:
    def boom(signum: int, frame: object) -> None:
        raise TimeoutError("planning hung on a FIFO source")

    old = signal.signal(signal.SIGALRM, boom)
    signal.setitimer(signal.ITIMER_REAL, 10.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.usefixtures("alarm")
def test_fifo_source_conflicts_without_hanging(ws: Path, co: Path) -> None:
    os.mkfifo(ws / "memory/pipe")
    put(ws / "memory/ok.md")
    project(ws, ["ok.md", "pipe"], [co])
    plan = plan_of(ws)
    op = one_op(plan, mem(co, "pipe"))
    assert op.action is Action.CONFLICT
    assert op.rule == "INV-MEM-02"
    assert "FIFO" in op.reason
    assert sync_blocked(ws) == "blocked"
    assert not mem(co).exists()


@pytest.mark.usefixtures("alarm")
def test_fifo_notes_conflict_without_hanging(ws: Path, co: Path) -> None:
    (ws / "projects/demo/memory").mkdir(parents=True)
    os.mkfifo(ws / "projects/demo/memory/notes")
    project(ws, [], [co])
    op = one_op(plan_of(ws), mem(co, "notes"))
    assert op.action is Action.CONFLICT
    assert "FIFO" in op.reason


def test_missing_source_conflicts(ws: Path, co: Path) -> None:
    project(ws, ["absent.md", "team/absent.md"], [co])
    plan = plan_of(ws)
    for rel in ("absent.md", "team/absent.md"):
        op = one_op(plan, mem(co, rel))
        assert op.action is Action.CONFLICT
        assert "does not exist" in op.reason
        assert op.rule == "INV-MEM-07"
        assert op.remedy and "create" in op.remedy


# --------------------------------------------------------------------------- [P2]


def _identity(path: Path) -> tuple[int, int, int, int, bytes | str]:
    st = os.lstat(path)
    body: bytes | str = os.readlink(path) if os.path.islink(path) else path.read_bytes()
    return st.st_ino, st.st_mode, st.st_mtime_ns, st.st_ctime_ns, body


def test_foreign_entries_warned_and_preserved_by_a_real_sync(
    ws: Path, co: Path, root: Path
) -> None:
    put(ws / "memory/a.md")
    project(ws, ["a.md"], [co])
    ds = put(mem(co, ".DS_Store"), "\0\1binary")
    foreign_file = put(mem(co, "mine.txt"), "hand-written\n")
    foreign_link = mem(co, "elsewhere")
    foreign_link.symlink_to(root / "elsewhere-target")
    nested = put(mem(co, "sub/.hidden"))
    before = {p: _identity(p) for p in (ds, foreign_file, foreign_link, nested)}
    plan = plan_of(ws)
    assert not plan.blocked
    warned = {f.path for f in plan.findings
              if f.code == "memory.foreign_entry" and f.severity == "warning"}
    assert warned == {str(p) for p in before}
    assert all(op.target not in warned for op in plan.operations)
    result = sync(ws)
    assert result.outcome == "applied"
    assert {p: _identity(p) for p in before} == before
    assert os.readlink(mem(co, "a.md")) == f"{ws}/memory/a.md"


def test_stale_owned_links_unlinked_and_emptied_dirs_pruned(ws: Path, co: Path) -> None:
    put(ws / "memory/keep.md")
    project(ws, ["keep.md"], [co])
    m = mem(co)
    (m / "old/deeper").mkdir(parents=True)
    (m / "gone.md").symlink_to(f"{ws}/memory/gone.md")  # absolute literal, dangling
    (m / "old/deeper/x.md").symlink_to(f"{ws}/memory/old/deeper/x.md")
    (m / "old/y.md").symlink_to(os.path.relpath(ws / "memory/old/y.md", m / "old"))
    (m / "empty").mkdir()  # already empty: preserved with a warning
    plan = plan_of(ws)
    unlinks = {op.target: op.entry for op in plan.operations if op.action is Action.UNLINK}
    assert unlinks == {
        str(m / "gone.md"): "link",
        str(m / "old/deeper/x.md"): "link",
        str(m / "old/y.md"): "link",
        str(m / "old/deeper"): "directory",
        str(m / "old"): "directory",
    }
    assert {op.rule for op in plan.operations if op.action is Action.UNLINK} == {"INV-MEM-06"}
    assert any(f.code == "memory.empty_directory" and f.path == str(m / "empty")
               for f in plan.findings)
    result = sync(ws)
    assert result.outcome == "applied"
    assert sorted(os.listdir(m)) == ["empty", "keep.md"]
    assert all(s in (Status.APPLIED, Status.UNCHANGED, Status.SKIPPED) for s in result.statuses)
    # A second run has nothing left to do.
    again = sync(ws)
    assert again.outcome == "unchanged"
    assert {op.action for op in again.plan.operations} == {Action.NOOP}


def test_foreign_link_in_pruned_candidate_keeps_its_directory(ws: Path, co: Path) -> None:
    project(ws, [], [co])
    m = mem(co)
    (m / "d").mkdir(parents=True)
    (m / "d/mine.md").symlink_to("/etc/hostname")
    (m / "d/x.md").symlink_to(f"{ws}/memory/d/x.md")
    plan = plan_of(ws)
    assert [(op.action, op.target) for op in plan.operations] == [
        (Action.UNLINK, str(m / "d/x.md"))
    ]
    sync(ws)
    assert os.listdir(m / "d") == ["mine.md"]


def test_stale_link_beside_a_desired_target_keeps_the_directory(ws: Path, co: Path) -> None:
    put(ws / "memory/team/a.md")
    project(ws, ["team/a.md"], [co])
    (mem(co, "team")).mkdir(parents=True)
    mem(co, "team/old.md").symlink_to(f"{ws}/memory/team/old.md")
    plan = plan_of(ws)
    assert sorted((op.action.value, op.target) for op in plan.operations) == [
        ("CREATE", str(mem(co, "team/a.md"))),
        ("UNLINK", str(mem(co, "team/old.md"))),
    ]
    sync(ws)
    assert os.listdir(mem(co, "team")) == ["a.md"]


def test_owned_link_where_a_directory_is_now_needed(ws: Path, co: Path) -> None:
    """A former reference ``team`` (linked) became ``team/a.md``: [O4] CONFLICT for
    ``team/a.md``, the link preserved, the remedy says it is aikito's and safe to remove."""
    put(ws / "memory/team/a.md")
    project(ws, ["team/a.md"], [co])
    mem(co).mkdir(parents=True)
    mem(co, "team").symlink_to(f"{ws}/memory/team")
    plan = plan_of(ws)
    [op] = plan.operations
    assert (op.action, op.target) == (Action.CONFLICT, str(mem(co, "team/a.md")))
    assert op.remedy is not None and "aikito's link" in op.remedy
    assert plan.blocked
    assert os.readlink(mem(co, "team")) == f"{ws}/memory/team"
    assert os.listdir(ws / "memory/team") == ["a.md"]  # nothing written into the source


def test_notes_symlink_leaving_project_memory_root_conflicts(ws: Path, co: Path) -> None:
    (ws / "memory/shared").mkdir()
    (ws / "projects/demo/memory").mkdir(parents=True)
    (ws / "projects/demo/memory/notes").symlink_to(ws / "memory/shared")
    project(ws, [], [co])
    op = one_op(plan_of(ws), mem(co, "notes"))
    assert op.action is Action.CONFLICT
    assert op.rule == "INV-MEM-02"


def test_notes_symlink_inside_project_memory_root_is_fine(ws: Path, co: Path) -> None:
    (ws / "projects/demo/memory/real-notes").mkdir(parents=True)
    (ws / "projects/demo/memory/notes").symlink_to("real-notes")
    project(ws, [], [co])
    op = one_op(plan_of(ws), mem(co, "notes"))
    assert op.action is Action.CREATE
    assert op.source == f"{ws}/projects/demo/memory/notes"


def test_offline_duplicates_by_normalised_path(ws: Path, co: Path, root: Path) -> None:
    put(ws / "memory/a.md")
    gone = root / "gone"
    project(ws, ["a.md"], [f"{gone}", f"{root}//gone/", f"{root}/x/../gone", co])
    plan = plan_of(ws)
    assert [(c.label, c.path, c.state) for c in plan.checkouts] == [
        ("1", str(gone), CheckoutState.OFFLINE),
        ("4", str(co), CheckoutState.ACTIVE),
    ]


def test_tilde_candidate_expands_to_home(
    ws: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = root / "h"
    (home / "code/demo").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    put(ws / "memory/a.md")
    project(ws, ["a.md"], ["~/code/demo"])
    plan = plan_of(ws)
    assert [(c.path, c.state) for c in plan.checkouts] == [
        (str(home / "code/demo"), CheckoutState.ACTIVE)
    ]
    sync(ws)
    assert os.readlink(home / "code/demo/.agents/memory/a.md") == f"{ws}/memory/a.md"


def test_a_directory_on_the_way_is_checked_once_for_every_source_below_it(
    tmp_path: Path,
) -> None:
    """[P5] [S3]: two sources below ``team/t0`` record the same check of each directory on
    the way (one value per path, by type alone), and the plan re-checks each path once."""
    from aikito_mem.model import ProjectConfig
    from aikito_mem.world.observe import Observer
    from aikito_mem.world.resources import resolve

    w = WS(tmp_path)
    w.add_file("team/t0/a.md")
    w.add_file("team/t0/b.md")
    config = ProjectConfig("demo", f"{w.root}/projects/demo",
                           f"{w.root}/projects/demo/agent.toml",
                           ("team/t0/a.md", "team/t0/b.md"), (), (), b"")
    a, b = resolve(config, w.root, Observer()).resources
    assert [c.path for c in a.checks[:-1]] == [c.path for c in b.checks[:-1]] == [
        f"{w.root}/memory", f"{w.root}/memory/team", f"{w.root}/memory/team/t0"]
    assert all(x is y for x, y in zip(a.checks[:-1], b.checks[:-1], strict=True))
    assert a.checks[-1].path != b.checks[-1].path
