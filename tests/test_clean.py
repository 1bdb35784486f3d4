"""``aikito clean`` ([L3]): the pure clean planner, real checkouts cleaned through the
sync's engine (planned, dry-run-able, locked, verified, guarded), the deleted project's
``clean PATH``, and the command line.

Every real-tree test keeps foreign entries around and asserts them byte- and
inode-identical afterwards (:mod:`tests.helpers.snapshots`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from aikito_mem.commands.clean import Cleaner
from aikito_mem.config.discovery import resolve_workspace
from aikito_mem.errors import ConfigError, StalePlanError, UnsafePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutPlan,
    CheckoutState,
    Kind,
    Observed,
    Operation,
    Plan,
    PlannedTarget,
    SegmentName,
)
from aikito_mem.planner.clean import build_clean_plan, owner, place
from aikito_mem.values import PlanKind, replace
from aikito_mem.views.clean import CleanCheckout
from aikito_mem.world.observe import lstat_link, with_identity
from tests.helpers.cli import invoke, one_json
from tests.helpers.snapshots import changed, snapshot
from tests.helpers.workspace import WS

W = "/ws"
CO = "/co"
DIR = Observed(Kind.DIR, None, 1, 2)
FILE = Observed(Kind.FILE, None, 1, 3)
_MEM, _SKILLS, _INSTR = SegmentName.MEMORY, SegmentName.SKILLS, SegmentName.INSTRUCTIONS


def link(literal: str) -> Observed:
    return Observed(Kind.LINK, literal, 1, 9)


def plan_of(co: CleanCheckout, project: str | None = "demo",
            targets: tuple[str, ...] = ("AGENTS.md", ".claude/CLAUDE.md")) -> Plan:
    return build_clean_plan(workspace=W, workspace_source="option", project=project,
                            config_path="", checkouts=(co,),
                            targets=tuple(PlannedTarget(t) for t in targets))


def brief(plan: Plan) -> list[tuple[str, str, str]]:
    return [(op.segment.value, op.target.removeprefix(f"{CO}/"), op.entry)
            for op in plan.operations if op.action is Action.UNLINK]


def checkout(**kw: Any) -> CleanCheckout:
    base: dict[str, Any] = {"root": DIR, "agents": DIR}
    base.update(kw)
    return CleanCheckout("1", CO, CheckoutState.ACTIVE, **base)


# =================================================================== pure: ownership


@pytest.mark.parametrize(("segment", "rel", "literal", "project", "owned"), [
    (_MEM, "a.md", f"{W}/memory/a.md", "demo", True),
    (_MEM, "team/a.md", "../../../../ws/memory/team/a.md", "demo", True),  # relative
    (_MEM, "a.md", f"{W}/memory/b.md", "demo", False),  # another resource's path
    (_MEM, "a.md", f"{W}//memory/a.md", "demo", False),  # not byte-exact
    (_MEM, "notes", f"{W}/projects/demo/memory/notes", "demo", True),
    (_MEM, "notes", f"{W}/memory/demo/notes", "demo", True),  # legacy notes
    (_MEM, "notes", f"{W}/projects/other/memory/notes", "demo", False),
    (_MEM, "notes", f"{W}/projects/gone/memory/notes", None, True),  # clean PATH
    (_MEM, "notes", f"{W}/memory/gone/notes", None, True),
    (_MEM, "notes", f"{W}/projects/../x/memory/notes", None, False),
    (_MEM, "notes", f"{W}/projects/a/b/memory/notes", None, False),
    (_MEM, "x.md", f"{W}/projects/gone/memory/notes", None, False),
    (_SKILLS, "review", f"{W}/skills/review", "demo", True),
    (_SKILLS, "review", f"{W}/skills/other", "demo", False),
    (_INSTR, "AGENTS.md", f"{W}/projects/demo/AGENTS.md", "demo", True),
    (_INSTR, "AGENTS.md", f"{W}/projects/other/AGENTS.md", "demo", False),
    (_INSTR, "AGENTS.md", f"{W}/projects/gone/AGENTS.md", None, True),
    (_INSTR, "AGENTS.md", f"{W}/projects/./AGENTS.md", None, False),
    (_INSTR, "AGENTS.md", f"{W}/projects/gone/memory/notes", None, False),
    (_INSTR, "AGENTS.md", None, None, False),
])
def test_owner_is_the_canonical_path_of_the_place(segment: SegmentName, rel: str,
                                                  literal: str | None, project: str | None,
                                                  owned: bool) -> None:
    """[L3]/[O1]: a link is owned when its literal names the canonical path its own place
    names (relative literals normalised from the link's directory); for ``clean PATH``
    the notes and instructions of any (single, clean) project name."""
    link_dir = {_MEM: f"{CO}/.agents/memory", _SKILLS: f"{CO}/.agents/skills",
                _INSTR: CO}[segment]
    if "/" in rel:
        link_dir = f"{link_dir}/{rel.rpartition('/')[0]}"
    assert (owner(segment, rel, literal, link_dir, W, project) is not None) is owned


@pytest.mark.parametrize(("rel", "expected"), [
    (".agents/memory/a.md", (_MEM, "a.md")),
    (".agents/memory/team/a.md", (_MEM, "team/a.md")),
    (".agents/memory/../x", None),
    (".agents/memory/trailing ", (_MEM, "trailing ")),  # [H3]: any bytes a name can hold
    (".agents/memory/caf\udce9.md", (_MEM, "caf\udce9.md")),
    (".agents/skills/review", (_SKILLS, "review")),
    (".agents/skills/a/b", None),
    (".agents/AGENTS.md", (_INSTR, ".agents/AGENTS.md")),
    ("AGENTS.md", (_INSTR, "AGENTS.md")),
    ("GEMINI.md", None),  # not a target of the registry: never looked at
    (".git/config", None),
])
def test_place(rel: str, expected: tuple[SegmentName, str] | None) -> None:
    assert place(rel, frozenset({"AGENTS.md", ".claude/CLAUDE.md"})) == expected


# =================================================================== pure: the planner


def test_every_owned_link_of_every_segment_is_removed_then_emptied_dirs_pruned() -> None:
    co = checkout(
        agents_entries=(("AGENTS.md", link(f"{W}/projects/demo/AGENTS.md")),
                        ("memory", DIR), ("skills", DIR)),
        memory=DIR,
        memory_entries=(("a.md", link(f"{W}/memory/a.md")), ("team", DIR),
                        ("team/b.md", link(f"{W}/memory/team/b.md"))),
        skills=DIR, skills_entries=(("review", link(f"{W}/skills/review")),),
        targets=((".agents/AGENTS.md", link(f"{W}/projects/demo/AGENTS.md")),
                 ("AGENTS.md", link(f"{W}/projects/demo/AGENTS.md")),
                 (".claude/CLAUDE.md", link(f"{W}/projects/demo/AGENTS.md"))),
        parents=((".claude", DIR, ("CLAUDE.md",)),),
    )
    plan = plan_of(co)
    assert plan.kind is PlanKind.CLEAN
    assert not plan.blocked and not plan.findings
    assert brief(plan) == [
        ("skills", ".agents/skills", "directory"),
        ("skills", ".agents/skills/review", "link"),
        ("instructions", ".agents/AGENTS.md", "link"),
        ("instructions", ".claude", "directory"),
        ("instructions", ".claude/CLAUDE.md", "link"),
        ("instructions", "AGENTS.md", "link"),
        ("memory", ".agents", "directory"),
        ("memory", ".agents/memory", "directory"),
        ("memory", ".agents/memory/a.md", "link"),
        ("memory", ".agents/memory/team", "directory"),
        ("memory", ".agents/memory/team/b.md", "link"),
    ]
    assert all(op.rule == "L3" for op in plan.operations)
    assert not any(op.action is Action.CREATE for op in plan.operations)


def test_foreign_entries_are_findings_and_keep_their_directories() -> None:
    co = checkout(
        agents_entries=(("config.yaml", FILE), ("memory", DIR), ("skills", DIR)),
        memory=DIR,
        memory_entries=(("a.md", link(f"{W}/memory/b.md")),  # another resource's path
                        ("mine.txt", FILE), ("team", DIR),
                        ("team/a.md", link(f"{W}/memory/team/a.md")),
                        ("empty", DIR)),
        skills=DIR, skills_entries=(("x", link("/elsewhere")), ("real", DIR)),
        targets=(("AGENTS.md", FILE), (".claude/CLAUDE.md", link("/mine.md"))),
        parents=((".claude", DIR, ("CLAUDE.md", "settings.json")),),
    )
    plan = plan_of(co)
    assert brief(plan) == [("memory", ".agents/memory/team", "directory"),
                           ("memory", ".agents/memory/team/a.md", "link")]
    kept = sorted(f.path.removeprefix(f"{CO}/") for f in plan.findings if f.path)
    assert kept == [".agents/memory/a.md", ".agents/memory/empty", ".agents/memory/mine.txt",
                    ".agents/skills/real", ".agents/skills/x", ".claude/CLAUDE.md",
                    "AGENTS.md"]
    assert {f.code for f in plan.findings} == {"clean.foreign_entry"}
    assert all(f.severity == "warning" for f in plan.findings)


def test_runtime_directories_already_empty_are_pruned_a_user_subdirectory_is_not() -> None:
    """Decision: ``.agents``, ``.agents/memory`` and ``.agents/skills`` are aikito's own
    ([O3]) and go whenever the clean leaves them empty; a directory below them, or on the
    way to an instruction target, only when the clean's removals empty it."""
    empty = checkout(agents_entries=(("memory", DIR), ("skills", DIR)), memory=DIR,
                     skills=DIR)
    assert brief(plan_of(empty)) == [("skills", ".agents/skills", "directory"),
                                     ("memory", ".agents", "directory"),
                                     ("memory", ".agents/memory", "directory")]
    user = checkout(agents_entries=(("memory", DIR),), memory=DIR,
                    memory_entries=(("team", DIR),),
                    parents=((".claude", DIR, ()),))
    assert brief(plan_of(user)) == []


def test_links_behind_a_link_are_never_looked_at() -> None:
    """``.agents`` (or a segment root) as a symlink: a finding, nothing below it."""
    co = checkout(agents=link("/elsewhere"),
                  targets=(("AGENTS.md", link(f"{W}/projects/demo/AGENTS.md")),))
    plan = plan_of(co)
    assert brief(plan) == [("instructions", "AGENTS.md", "link")]
    assert [f.path for f in plan.findings] == [f"{CO}/.agents"]
    co = checkout(agents_entries=(("memory", link("/x")),), memory=link("/x"))
    plan = plan_of(co)
    assert brief(plan) == []
    assert [f.path for f in plan.findings] == [f"{CO}/.agents/memory"]


def test_offline_and_invalid_checkouts_are_skipped() -> None:
    off = CleanCheckout("2", "/gone", CheckoutState.OFFLINE, "path does not exist")
    bad = CleanCheckout("3", "/file", CheckoutState.INVALID, "it is a regular file",
                        root=FILE)
    plan = build_clean_plan(workspace=W, workspace_source="option", project="demo",
                            config_path="", checkouts=(off, bad), targets=())
    assert [(op.action, op.target) for op in plan.operations] == [
        (Action.SKIP, "/gone"), (Action.SKIP, "/file")]
    assert [f.code for f in plan.findings] == ["clean.invalid_checkout"]
    assert not plan.has_changes


_EVENTS: list[str] = []
_RECORDING = [False]


def _audit(event: str, _args: tuple[object, ...]) -> None:
    if _RECORDING[0]:
        _EVENTS.append(event)


sys.addaudithook(_audit)  # cannot be removed: it records only while the flag is set


def test_the_clean_planner_does_no_io() -> None:
    co = checkout(memory=DIR, memory_entries=(("a.md", link(f"{W}/memory/a.md")),),
                  agents_entries=(("memory", DIR),),
                  targets=(("AGENTS.md", link(f"{W}/projects/x/AGENTS.md")),))
    _EVENTS.clear()
    _RECORDING[0] = True
    try:
        plan = plan_of(co, project=None)
        plan.summary()
    finally:
        _RECORDING[0] = False
    assert len(plan.operations) == 4
    assert [e for e in _EVENTS if e.startswith(("open", "os.", "shutil.", "pathlib."))] == []


# =================================================================== real checkouts


class World:
    """A workspace with every segment and a checkout synced, foreign entries around."""

    def __init__(self, ws: WS) -> None:
        self.ws = ws
        ws.add_file("team/a.md", "a\n")
        ws.add_file("g.md", "g\n")
        ws.add_notes("demo")
        ws.add_skill("review")
        ws.write_instructions("demo", "# be nice\n")
        ws.add_agent("codex", '[agents.codex]\nproject_instruction_path = "AGENTS.md"\n')
        ws.add_agent("claude", '[agents.claude]\nproject_instruction_path = '
                     '".claude/CLAUDE.md"\n[agents.claude.detect]\npaths = [".claude"]\n')
        os.makedirs(f"{ws.home}/.claude", exist_ok=True)
        self.co = ws.checkout("main")
        self.outside = f"{ws.base}/outside"
        os.makedirs(self.outside)
        Path(self.outside, "secret.md").write_text("secret\n")
        Path(self.co, "README.md").write_text("the user's own\n")
        ws.write_config("demo", memory=["team/a.md", "g.md"], paths=[self.co],
                        skills=["review"])
        ws.project("demo").sync()
        mem = f"{self.co}/.agents/memory"
        Path(mem, "mine.txt").write_text("mine\n")
        os.symlink(f"{self.outside}/secret.md", f"{mem}/elsewhere.md")
        os.symlink(f"{ws.root}/skills/review", f"{self.co}/.agents/skills/alias")

    def foreign(self) -> dict[str, Any]:
        """Everything but aikito's runtime tree and instruction targets (and the checkout
        directory itself, whose entries those are)."""
        snap = snapshot(*self.ws.roots(), skip=(f"{self.co}/.agents", f"{self.co}/.claude",
                                                f"{self.co}/AGENTS.md"))
        snap.pop(self.co, None)
        return snap

    def links(self) -> list[str]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.co):
            for name in dirnames + filenames:
                path = f"{dirpath}/{name}"
                if os.path.islink(path):
                    out.append(path[len(self.co) + 1:])
        return sorted(out)

    def cleaner(self, project: str | None = "demo", path: str | None = None) -> Cleaner:
        return Cleaner(resolve_workspace(self.ws.root), project, path)


@pytest.fixture
def w(ws: WS) -> World:
    return World(ws)


def test_clean_project_removes_owned_links_of_all_segments_and_keeps_the_rest(w: World
                                                                              ) -> None:
    assert w.links() == [".agents/memory/elsewhere.md", ".agents/memory/g.md",
                         ".agents/memory/notes", ".agents/memory/team/a.md",
                         ".agents/skills/alias", ".agents/skills/review", ".claude/CLAUDE.md",
                         "AGENTS.md"]
    config = Path(w.ws.config_path("demo")).read_bytes()
    before = w.foreign()
    kept = {p: lstat_link(f"{w.co}/{p}") for p in (".agents/memory/mine.txt",
                                                   ".agents/memory/elsewhere.md",
                                                   ".agents/skills/alias")}
    result = w.cleaner().run()
    assert result.outcome == "applied"
    assert w.links() == [".agents/memory/elsewhere.md", ".agents/skills/alias"]
    assert not os.path.lexists(f"{w.co}/.claude")  # emptied, pruned
    assert not os.path.lexists(f"{w.co}/.agents/memory/team")
    assert changed(before, w.foreign()) == set()
    for rel, obs in kept.items():
        assert lstat_link(f"{w.co}/{rel}") == obs
    assert Path(w.ws.config_path("demo")).read_bytes() == config  # agent.toml not edited
    # A second clean has nothing to do and changes nothing.
    everything = snapshot(*w.ws.roots())
    again = w.cleaner().run()
    assert again.outcome == "unchanged"
    assert not again.plan.has_changes
    assert snapshot(*w.ws.roots()) == everything


def test_everything_goes_when_only_owned_links_were_there(w: World) -> None:
    os.unlink(f"{w.co}/.agents/memory/mine.txt")
    os.unlink(f"{w.co}/.agents/memory/elsewhere.md")
    os.unlink(f"{w.co}/.agents/skills/alias")
    before = w.foreign()
    w.cleaner().run()
    assert sorted(os.listdir(w.co)) == ["README.md"]
    assert changed(before, w.foreign()) == set()


def test_a_directory_holding_a_user_file_is_kept(w: World) -> None:
    Path(w.co, ".claude", "settings.json").write_text("{}\n")
    w.cleaner().run()
    assert os.listdir(f"{w.co}/.claude") == ["settings.json"]


def test_a_target_dropped_from_the_registry_is_not_looked_at(w: World) -> None:
    os.unlink(f"{w.ws.root}/agents/claude.toml")
    w.cleaner().run()
    assert os.readlink(f"{w.co}/.claude/CLAUDE.md") == f"{w.ws.root}/projects/demo/AGENTS.md"


def test_clean_project_path_cleans_exactly_that_checkout(w: World) -> None:
    other = w.ws.checkout("other")
    w.ws.write_config("demo", memory=["team/a.md", "g.md"], paths=[w.co, other],
                      skills=["review"])
    w.ws.project("demo").sync()
    plan = w.cleaner(path=other).plan()
    assert {op.checkout for op in plan.operations} == {other}
    w.cleaner(path=other).run()
    assert os.listdir(other) == []
    assert os.path.islink(f"{w.co}/AGENTS.md")


def test_clean_path_after_the_project_was_deleted(w: World) -> None:
    """The project directory is gone (``rm -rf``): ``clean PATH`` still knows aikito's
    links by their literals, the notes and instructions of a project that no longer
    exists included."""
    shutil.rmtree(f"{w.ws.root}/projects/demo")
    with pytest.raises(ConfigError):
        w.cleaner().plan()
    before = w.foreign()
    result = w.cleaner(project=None, path=w.co).run()
    assert result.outcome == "applied"
    assert w.links() == [".agents/memory/elsewhere.md", ".agents/skills/alias"]
    assert changed(before, w.foreign()) == set()
    assert w.cleaner(project=None, path=w.co).run().outcome == "unchanged"


def test_clean_path_refuses_a_missing_path_and_the_workspace(w: World) -> None:
    with pytest.raises(ConfigError, match="expected an existing directory"):
        w.cleaner(project=None, path=f"{w.co}/nope").plan()
    with pytest.raises(ConfigError, match="workspace memory tree"):
        w.cleaner(project=None, path=f"{w.ws.root}/memory").plan()
    # [H1]: the home directory and the workspace's parent are never checkouts.
    with pytest.raises(ConfigError, match="home directory"):
        w.cleaner(project=None, path=w.ws.home).plan()
    with pytest.raises(ConfigError, match="ancestor of the workspace"):
        w.cleaner(project=None, path=str(w.ws.base)).plan()


def test_an_offline_checkout_is_skipped(w: World) -> None:
    w.ws.write_config("demo", memory=["g.md"], paths=[w.co, f"{w.ws.base}/gone"])
    plan = w.cleaner().plan()
    skips = [op for op in plan.operations if op.action is Action.SKIP]
    assert [op.target for op in skips] == [f"{w.ws.base}/gone"]
    assert w.cleaner().run().outcome == "applied"


def test_a_target_changed_after_planning_is_stale_nothing_written(w: World) -> None:
    job = w.cleaner()
    plan = job.plan()
    os.unlink(f"{w.co}/.agents/memory/g.md")
    os.symlink(f"{w.outside}/secret.md", f"{w.co}/.agents/memory/g.md")
    before = snapshot(*w.ws.roots())
    with pytest.raises(StalePlanError, match=r"g\.md"):
        execute(plan)
    assert snapshot(*w.ws.roots()) == before


def test_an_edited_registry_or_agent_toml_makes_the_plan_stale(w: World) -> None:
    plan = w.cleaner().plan()
    w.ws.add_agent("gemini", '[agents.gemini]\nproject_instruction_path = "GEMINI.md"\n')
    before = snapshot(*w.ws.roots())
    with pytest.raises(StalePlanError, match="instruction targets"):
        execute(plan)
    os.unlink(f"{w.ws.root}/agents/gemini.toml")
    plan = w.cleaner().plan()
    w.ws.write_config("demo", memory=["g.md"], paths=[w.co])
    before = snapshot(*w.ws.roots())
    with pytest.raises(StalePlanError, match=r"agent\.toml changed"):
        execute(plan)
    assert snapshot(*w.ws.roots()) == before


# =================================================================== the guard ([E9])


def _with(plan: Plan, *ops: Operation) -> Plan:
    return attrs.evolve(plan, operations=(*plan.operations, *ops))


def _unlink(co: str, rel: str, segment: SegmentName = _MEM, entry: str = "link"
            ) -> Operation:
    path = f"{co}/{rel}"
    obs = lstat_link(path)
    return Operation(Action.UNLINK, "L3", co, path, "tampered", observed=obs, entry=entry,
                     segment=segment)


def _tampered(w: World) -> dict[str, Plan]:
    """Plans whose every recorded observation is the live one (verification passes):
    only the guard refuses them."""
    plan = w.cleaner().plan()
    co = w.co
    os.makedirs(f"{co}/.git")
    Path(co, "GEMINI.md").symlink_to(f"{w.ws.root}/projects/demo/AGENTS.md")
    elsewhere = _unlink(co, ".agents/memory/elsewhere.md")
    alias = _unlink(co, ".agents/skills/alias", _SKILLS)
    create = Operation(Action.CREATE, "L3", co, f"{co}/.agents/memory/new.md", "tampered",
                       source=f"{w.outside}/secret.md", segment=_MEM)
    os.makedirs(f"{co}/.agents/memory/userdir")
    mine = _unlink(co, ".agents/memory/mine.txt")
    # A regular file, recorded as it is, but claiming the literal of an owned link.
    mine = attrs.evolve(mine, observed=replace(mine.observed,
                                               literal=f"{w.ws.root}/memory/mine.txt"))
    g_md = _unlink(co, ".agents/memory/g.md")
    # The writer names its target relative to the checkout: a target that only looks
    # like it is inside (``<co>X.agents/…``) would write the checkout's own entry.
    mislabelled = attrs.evolve(g_md, target=f"{co}X.agents/memory/g.md")
    return {
        "foreign link": _with(plan, elsewhere),
        "another resource's path": _with(plan, alias),
        "a file": _with(plan, mine),
        "a mislabelled target": _with(plan, mislabelled),
        "an entry word": _with(plan, attrs.evolve(g_md, entry="tree")),
        "a prune in another segment": _with(
            plan, _unlink(co, ".agents/memory/userdir", _SKILLS, entry="directory")),
        "an empty user directory": _with(
            plan, _unlink(co, ".agents/memory/userdir", entry="directory")),
        "a checkout twice": attrs.evolve(plan, checkouts=(*plan.checkouts,
                                                          plan.checkouts[0])),
        "a create": _with(plan, create),
        "no place of a clean": _with(plan, _unlink(co, "GEMINI.md", _INSTR)),
        "wrong segment": _with(plan, attrs.evolve(_unlink(co, "AGENTS.md", _INSTR),
                                                  segment=_SKILLS)),
        "a directory a clean may not prune": _with(
            plan, _unlink(co, ".git", _INSTR, entry="directory")),
        "a user directory nothing emptied": _with(
            plan, _unlink(co, "README.md", _INSTR, entry="directory")),
        "another checkout": _another_checkout(w, plan),
    }


def _another_checkout(w: World, plan: Plan) -> Plan:
    """A checkout agent.toml does not list, holding a link the clean would own."""
    other = w.outside
    os.makedirs(f"{other}/.agents/memory")
    os.symlink(f"{w.ws.root}/memory/g.md", f"{other}/.agents/memory/g.md")
    root = with_identity(other, lstat_link(other))
    extra = CheckoutPlan("x", other, CheckoutState.ACTIVE, dirs=(("", root),))
    return attrs.evolve(plan, checkouts=(*plan.checkouts, extra),
                        operations=(*plan.operations, _unlink(other, ".agents/memory/g.md")))


@pytest.mark.parametrize("case", ["foreign link", "another resource's path", "a file",
                                  "a mislabelled target", "an entry word",
                                  "a prune in another segment", "an empty user directory",
                                  "a checkout twice",
                                  "a create", "no place of a clean", "wrong segment",
                                  "a directory a clean may not prune",
                                  "a user directory nothing emptied", "another checkout"])
def test_the_guard_refuses_a_tampered_clean_plan(w: World, case: str) -> None:
    plan = _tampered(w)[case]
    before = snapshot(*w.ws.roots())
    with pytest.raises(UnsafePlanError):
        execute(plan)
    assert snapshot(*w.ws.roots()) == before


def test_the_guard_refuses_an_operation_of_no_checkout_of_the_plan(w: World) -> None:
    """An operation whose checkout is not an active checkout of the plan is refused by
    the guard itself (the executor would never reach it: it writes checkout by
    checkout)."""
    from aikito_mem.executor import guard

    plan = w.cleaner().plan()
    stray = attrs.evolve(_unlink(w.co, ".agents/memory/g.md"), checkout=w.outside)
    with pytest.raises(UnsafePlanError, match="not an active checkout of the plan"):
        guard.check(_with(plan, stray))


def test_the_guard_accepts_every_plan_the_clean_planner_makes(w: World) -> None:
    from aikito_mem.executor import guard

    guard.check(w.cleaner().plan())
    guard.check(w.cleaner(project=None, path=w.co).plan())
    other = w.ws.checkout("other")
    os.makedirs(f"{other}/.agents")
    guard.check(w.cleaner(project=None, path=other).plan())


def test_a_clean_plan_with_nothing_to_do_writes_nothing(w: World) -> None:
    w.cleaner().run()
    plan = w.cleaner().plan()
    assert not plan.has_changes
    assert all(op.action is Action.SKIP for op in plan.operations) or not plan.operations
    assert ABSENT.kind is Kind.ABSENT


# =================================================================== the command line


def _run(w: World, *args: str) -> Any:
    return invoke("--workspace", w.ws.root, "clean", *args, catch=True)


def test_cli_clean_project_dry_run_then_real_run(w: World) -> None:
    before = snapshot(*w.ws.roots())
    res = _run(w, "project", "demo", "--dry-run")
    assert res.exit_code == 0, res.output
    assert snapshot(*w.ws.roots()) == before
    assert "- .agents/memory/g.md" in res.stdout
    assert "- .claude/" in res.stdout
    assert "kept " in res.stdout and ".agents/memory/mine.txt: a regular file" in res.stdout
    assert "aikito clean project demo" in res.stdout
    assert " to remove, " in res.stdout and " to prune, " in res.stdout
    # A foreign entry is kept, and no remedy tells the user to delete it: it may be a
    # file git tracks ([L1]).
    assert "remove it yourself" not in res.stdout
    res = _run(w, "project", "demo")
    assert res.exit_code == 0, res.output
    assert "removals applied" in res.stdout
    # Words that say what happened: a finished clean removed, it does not "to remove".
    assert " removed, " in res.stdout and " pruned, " in res.stdout
    assert "to remove" not in res.stdout and "to prune" not in res.stdout
    res = _run(w, "project", "demo")
    assert res.exit_code == 0
    assert "nothing to clean" in res.stdout


def test_cli_json_document(w: World) -> None:
    res = _run(w, "project", "demo", "--json")
    doc = one_json(res.stdout)
    assert res.exit_code == 0
    assert doc["schema"] == "aikito.clean/1"
    assert doc["project"] == "demo" and doc["outcome"] == "applied"
    assert {op["action"] for op in doc["operations"]} == {"UNLINK"}
    assert {op["status"] for op in doc["operations"]} == {"applied"}
    assert doc["summary"]["unlink"] == len(doc["operations"])
    assert {f["code"] for f in doc["findings"]} == {"clean.foreign_entry"}
    assert set(doc["segments"]) == {"skills", "instructions", "memory"}


def test_cli_clean_path_of_a_deleted_project_and_a_checkout_named_project(
        w: World, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.rmtree(f"{w.ws.root}/projects/demo")
    res = _run(w, "project", "demo", "--json")
    assert res.exit_code == 4
    assert one_json(res.stdout)["error"]["code"] == "config.project_not_found"
    named = f"{w.ws.base}/co/project"
    shutil.move(w.co, named)
    monkeypatch.chdir(f"{w.ws.base}/co")
    res = _run(w, "./project", "--dry-run", "--json")
    doc = one_json(res.stdout)
    assert res.exit_code == 0, res.output
    assert doc["project"] is None and doc["outcome"] == "planned"
    assert doc["checkouts"][0]["path"] == named
    # Moved: the links still name the workspace, so they are aikito's.
    assert doc["summary"]["unlink"] >= 5


@pytest.mark.parametrize("args", [(), ("project",), ("a", "b"), ("project", "a", "b", "c")])
def test_cli_usage_errors(w: World, args: tuple[str, ...]) -> None:
    res = _run(w, *args)
    assert res.exit_code == 2
    assert res.stdout == ""


def test_cli_missing_path_is_a_configuration_error(w: World) -> None:
    res = _run(w, f"{w.co}/nope", "--json")
    assert res.exit_code == 4
    assert one_json(res.stdout)["outcome"] == "config_error"


@pytest.mark.parametrize("case", ["foreign link", "another resource's path", "a create",
                                  "a mislabelled target", "an empty user directory",
                                  "no place of a clean", "wrong segment",
                                  "a directory a clean may not prune", "another checkout"])
def test_without_the_guard_those_plans_would_write(w: World, case: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases above are refused by the guard alone: with it replaced by a no-op, the
    write it prevented happens."""
    from aikito_mem.executor import guard

    plan = _tampered(w)[case]
    monkeypatch.setattr(guard, "check", lambda plan, **kw: None)
    before = snapshot(*w.ws.roots())
    with contextlib.suppress(StalePlanError):  # the plan's own removal may find it gone
        execute(plan)
    assert changed(before, snapshot(*w.ws.roots()))


# =================================================================== dry run, lock


def test_a_dry_run_clean_writes_nothing_and_takes_no_lock(w: World) -> None:
    """[E7]: the write-event witness (every write-like audit event, ``flock`` included)
    sees nothing while a clean is planned and shown — by the API and the command line."""
    from tests.helpers.audit import RECORDER

    before = snapshot(*w.ws.roots())
    RECORDER.events.clear()
    RECORDER.armed = True
    try:
        plan = w.cleaner().plan()
        w.cleaner(project=None, path=w.co).plan()
        for args in (("project", "demo"), (w.co,)):
            res = _run(w, *args, "--dry-run", "--json")
            assert res.exit_code == 0, res.output
    finally:
        RECORDER.armed = False
    assert plan.has_changes
    assert RECORDER.events == []
    assert snapshot(*w.ws.roots()) == before


def test_a_clean_waits_for_the_checkout_lock(w: World) -> None:
    """[E3]: a real clean holds the per-checkout lock; while another process holds it,
    the clean is busy (exit 6) and removes nothing."""
    import fcntl

    fd = os.open(w.co, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        before = snapshot(*w.ws.roots())
        res = _run(w, "project", "demo", "--lock-timeout", "0", "--json")
        assert res.exit_code == 6
        assert one_json(res.stdout)["outcome"] == "busy"
        assert snapshot(*w.ws.roots()) == before
    finally:
        os.close(fd)


def test_owned_links_with_any_name_bytes_are_removed(w: World) -> None:
    """[H3]: ownership is by literal, whatever the name's bytes (a trailing space, a
    newline, bytes that are not UTF-8)."""
    mem = f"{w.co}/.agents/memory".encode()
    root = w.ws.root.encode()
    for name in (b"trailing ", b"new\nline", b"caf\xe9.md"):
        os.symlink(root + b"/memory/" + name, mem + b"/" + name)
    os.symlink(root + b"/skills/odd\xff", f"{w.co}/.agents/skills/".encode() + b"odd\xff")
    w.cleaner().run()
    assert w.links() == [".agents/memory/elsewhere.md", ".agents/skills/alias"]


def test_a_listed_refused_checkout_is_skipped_and_never_cleaned(w: World) -> None:
    """[H1]: a listed checkout that is the home directory is invalid: skipped with a
    warning, nothing there is touched, while the real checkout is cleaned."""
    home = w.ws.home
    os.makedirs(f"{home}/.agents/skills")
    os.symlink(f"{w.ws.root}/skills/review", f"{home}/.agents/skills/review")
    w.ws.write_config("demo", memory=["g.md"], paths=[w.co, home], skills=["review"])
    before = snapshot(home)
    plan = w.cleaner().plan()
    assert [op.target for op in plan.operations if op.action is Action.SKIP] == [home]
    assert "clean.invalid_checkout" in {f.code for f in plan.findings}
    w.cleaner().run()
    assert snapshot(home) == before
    assert not os.path.lexists(f"{w.co}/AGENTS.md")
