"""The pure planner, by table: [P1] per-target rules, [P2] stale entries and pruning,
[O4] checkout-level conflicts, [P3] blocking, [P4] order — and a proof that planning does
no I/O at all (an audit hook records every event while the planner runs).

Every input here is built by hand: no filesystem is involved.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any

import pytest
from hypothesis import given

from aikito_mem.executor.execute import write_order
from aikito_mem.executor.verify import operations_by_checkout
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutState,
    Finding,
    Kind,
    Observed,
    Plan,
)
from aikito_mem.planner import memory as planner
from aikito_mem.planner.memory import build_plan
from tests.helpers.pure import (
    BASE,
    CO,
    CURRENT_NOTES,
    DIR,
    LEGACY_NOTES,
    WS,
    brief,
    config,
    link,
    load_planner,
    notes,
    plan_of,
    ref,
    resource_set,
    view,
)
from tests.helpers.strategies import World, worlds
from tests.helpers.workspace import WS as Workspace

# =========================================================================== [P1]

SRC = f"{WS}/memory/glossary"

CONFLICT_STATES = {
    "symlink to another resource": (link(f"{WS}/memory/other"),
                                    f"a symlink to '{WS}/memory/other'"),
    "symlink outside the workspace": (link("/etc/passwd"), "a symlink to '/etc/passwd'"),
    "dangling symlink": (link("no-such-thing"), "a symlink to 'no-such-thing'"),
    "symlink with trailing slash": (link(SRC + "/"), f"a symlink to '{SRC}/'"),
    "absolute literal not normalised": (link(f"{WS}/memory/./glossary"),
                                        f"a symlink to '{WS}/memory/./glossary'"),
    "relative literal to another resource": (link("../../../../ws/memory/other"),
                                             "a symlink to '../../../../ws/memory/other'"),
    "relative literal one level short": (link("../../../ws/memory/glossary"),
                                         "a symlink to '../../../ws/memory/glossary'"),
    "regular file": (Observed(Kind.FILE), "a regular file"),
    "empty directory": (Observed(Kind.DIR), "a directory"),
    "FIFO": (Observed(Kind.FIFO), "a FIFO"),
    "socket": (Observed(Kind.SOCKET), "a socket"),
    "character device": (Observed(Kind.CHAR), "a character device"),
    "block device": (Observed(Kind.BLOCK), "a block device"),
}


def test_p1_missing_target_is_created() -> None:
    plan = plan_of(resource_set(ref("glossary")), view())
    [op] = plan.operations
    assert (op.action, op.rule) == (Action.CREATE, "INV-MEM-01")
    assert op.target == f"{BASE}/glossary"
    assert op.source == SRC
    assert op.resource == "glossary"
    assert op.reason == "target missing"
    assert op.observed == ABSENT
    assert not plan.blocked


@pytest.mark.parametrize("literal", [
    SRC,                                    # absolute, byte for byte
    "../../../../ws/memory/glossary",       # relative, joined to .agents/memory
    "./../../../../ws/memory/glossary",     # relative, normalised lexically
    "../../../../ws//memory/x/../glossary",  # relative, normalised lexically
], ids=["absolute", "relative", "relative-dot", "relative-unnormalised"])
def test_p1_owned_link_is_noop(literal: str) -> None:
    plan = plan_of(resource_set(ref("glossary")), view({"glossary": link(literal)}))
    [op] = plan.operations
    assert (op.action, op.rule) == (Action.NOOP, "INV-MEM-10")
    assert op.reason == "already linked"
    assert op.observed.literal == literal
    assert plan.changes == ()


def test_p1_owned_nested_relative_link_is_noop() -> None:
    res = ref("team/a.md")
    plan = plan_of(resource_set(res), view({
        "team": DIR, "team/a.md": link("../../../../../ws/memory/team/a.md")}))
    [op] = plan.operations
    assert op.action is Action.NOOP


@pytest.mark.parametrize("state", sorted(CONFLICT_STATES))
def test_p1_anything_else_at_target_is_conflict(state: str) -> None:
    obs, found = CONFLICT_STATES[state]
    plan = plan_of(resource_set(ref("glossary")), view({"glossary": obs}))
    [op] = plan.operations
    assert (op.action, op.rule) == (Action.CONFLICT, "INV-MEM-07")
    assert op.target == f"{BASE}/glossary"
    assert op.reason == f"found {found}; expected a symlink to '{SRC}'"
    assert op.remedy and f"{BASE}/glossary" in op.remedy
    assert op.observed == obs
    assert plan.blocked


def test_p1_non_empty_directory_is_conflict_and_its_content_preserved() -> None:
    plan = plan_of(resource_set(ref("glossary")),
                   view({"glossary": DIR, "glossary/mine.md": Observed(Kind.FILE)}))
    assert brief(plan) == [("CONFLICT", "INV-MEM-07", ".agents/memory/glossary", "link")]
    assert plan.operations[0].reason == f"found a directory; expected a symlink to '{SRC}'"
    # The user's file inside is preserved and named, never unlinked.
    assert [f.path for f in plan.findings] == [f"{BASE}/glossary/mine.md"]
    assert all(op.action is not Action.UNLINK for op in plan.operations)


def test_p1_unsafe_source_is_conflict_inv_mem_02() -> None:
    problem = f"source {SRC} goes through the symlink {SRC} -> '/etc', which leaves {WS}/memory"
    plan = plan_of(resource_set(ref("glossary", problem=problem)), view({"glossary": link(SRC)}))
    [op] = plan.operations
    assert (op.action, op.rule) == (Action.CONFLICT, "INV-MEM-02")
    assert op.reason == problem
    assert op.remedy is not None and "glossary" in op.remedy
    assert plan.blocked


def test_p1_missing_source_is_conflict_inv_mem_07() -> None:
    problem = "source does not exist"
    plan = plan_of(resource_set(ref("glossary", problem=problem, missing=True)), view())
    [op] = plan.operations
    assert (op.action, op.rule) == (Action.CONFLICT, "INV-MEM-07")
    assert op.reason == problem
    assert op.remedy is not None and f"create {SRC}" in op.remedy
    assert plan.blocked


def test_p1_unsafe_notes_is_conflict_with_directory_remedy() -> None:
    res = notes(problem=f"source {CURRENT_NOTES} is a regular file; expected a directory")
    plan = plan_of(resource_set(res), view())
    [op] = plan.operations
    assert (op.action, op.rule, op.target) == (Action.CONFLICT, "INV-MEM-02", f"{BASE}/notes")
    assert "real directory" in (op.remedy or "")


def test_p1_offline_checkout_is_skip_and_observes_nothing() -> None:
    plan = plan_of(resource_set(ref("glossary"), ref("team/a.md"), notes()),
                   view(path="/co/gone", state=CheckoutState.OFFLINE))
    assert [(op.action, op.rule) for op in plan.operations] == [(Action.SKIP, "INV-MEM-08")] * 3
    assert all(op.reason == "checkout offline: path does not exist" for op in plan.operations)
    assert {op.resource for op in plan.operations} == {"glossary", "team/a.md", "notes"}
    assert plan.checkouts[0].state is CheckoutState.OFFLINE
    assert not plan.blocked and not plan.has_changes


def test_p1_offline_does_not_block_active() -> None:
    plan = plan_of(resource_set(ref("glossary")),
                   view(path="/co/gone", label="1", state=CheckoutState.OFFLINE),
                   view(label="2"))
    assert [op.action for op in plan.operations] == [Action.SKIP, Action.CREATE]
    assert not plan.blocked


def test_p1_shadowed_reference_is_skip_with_reason() -> None:
    plan = plan_of(resource_set(notes(), ref("notes", shadowed=True)), view())
    acts = sorted((op.action.value, op.resource or "", op.reason) for op in plan.operations)
    assert acts == [
        ("CREATE", "notes", "target missing"),
        ("SKIP", "notes", "shadowed by project notes"),
    ]
    skip = next(op for op in plan.operations if op.action is Action.SKIP)
    assert skip.rule == "S4"
    assert skip.source == f"{WS}/memory/notes"
    assert not plan.blocked


def test_p1_shadowed_nested_reference_is_skip_not_conflict() -> None:
    # notes/x.md would be created through the notes link: it is skipped, never dropped.
    plan = plan_of(resource_set(notes(), ref("notes/x.md", shadowed=True)),
                   view({"notes": link(CURRENT_NOTES)}))
    assert sorted(brief(plan)) == [
        ("NOOP", "INV-MEM-10", ".agents/memory/notes", "link"),
        ("SKIP", "S4", ".agents/memory/notes/x.md", "link"),
    ]


def test_p1_legacy_notes_link_when_notes_current_is_unlink_then_create() -> None:
    plan = plan_of(resource_set(notes("current")), view({"notes": link(LEGACY_NOTES)}))
    assert brief(plan) == [
        ("UNLINK", "INV-MEM-06", ".agents/memory/notes", "link"),
        ("CREATE", "INV-MEM-03", ".agents/memory/notes", "link"),
    ]
    unlink, create = plan.operations
    assert unlink.source == LEGACY_NOTES
    assert unlink.observed.literal == LEGACY_NOTES
    assert create.source == CURRENT_NOTES
    assert LEGACY_NOTES in create.reason
    assert not plan.blocked


def test_p1_current_notes_link_when_notes_legacy_is_a_conflict_with_a_safe_remedy() -> None:
    # Only legacy -> current is a replacement in the [P1] table; any other link at a desired
    # target is "a symlink to anything else": CONFLICT, preserved.
    plan = plan_of(resource_set(notes("legacy"), location="legacy"),
                   view({"notes": link(CURRENT_NOTES)}))
    [op] = plan.operations
    assert (op.action, op.rule) == (Action.CONFLICT, "INV-MEM-07")
    assert op.remedy is not None and "aikito's link" in op.remedy


def test_p1_notes_link_in_place_is_noop() -> None:
    plan = plan_of(resource_set(notes("legacy"), location="legacy"),
                   view({"notes": link(LEGACY_NOTES)}))
    assert brief(plan) == [("NOOP", "INV-MEM-10", ".agents/memory/notes", "link")]


def test_p1_reference_link_to_a_notes_path_is_foreign() -> None:
    # Historical notes paths are only allowed for the runtime path "notes" ([O2]).
    plan = plan_of(resource_set(ref("glossary")), view({"glossary": link(LEGACY_NOTES)}))
    assert [op.action for op in plan.operations] == [Action.CONFLICT]


# =========================================================================== [O4]


@pytest.mark.parametrize(("where", "agents", "memory"), [
    (".agents", link("/elsewhere"), ABSENT),
    (".agents", Observed(Kind.FILE), ABSENT),
    (".agents", Observed(Kind.FIFO), ABSENT),
    (".agents/memory", DIR, link("/elsewhere")),
    (".agents/memory", DIR, link(f"{WS}/memory")),
    (".agents/memory", DIR, Observed(Kind.FILE)),
])
def test_o4_runtime_root_not_a_directory_is_one_checkout_conflict(
    where: str, agents: Observed, memory: Observed
) -> None:
    res = resource_set(ref("glossary"), ref("team/a.md"), notes())
    plan = plan_of(res, view(agents=agents, memory=memory))
    [op] = plan.operations
    found = agents if where == ".agents" else memory
    assert (op.action, op.rule) == (Action.CONFLICT, "INV-MEM-07")
    assert op.target == f"{CO}/{where}"
    assert op.reason == f"{CO}/{where} is {found.describe()}; expected a real directory"
    assert op.remedy and "out of the way" in op.remedy
    assert plan.blocked


def test_o4_missing_runtime_root_creates_everything() -> None:
    plan = plan_of(resource_set(ref("glossary"), ref("team/a.md")),
                   view(agents=ABSENT, memory=ABSENT))
    assert [op.action for op in plan.operations] == [Action.CREATE, Action.CREATE]
    # The plan records what it relied on: root, .agents, .agents/memory, team.
    assert [rel for rel, _ in plan.checkouts[0].dirs] == [
        "", ".agents", ".agents/memory", ".agents/memory/team"]


@pytest.mark.parametrize("found", [Observed(Kind.FILE), link("/elsewhere"),
                                   link("../other"), Observed(Kind.FIFO)])
def test_o4_intermediate_non_directory_is_conflict_for_that_resource(found: Observed) -> None:
    plan = plan_of(resource_set(ref("glossary"), ref("team/a.md")), view({"team": found}))
    by_res = {op.resource: op for op in plan.operations}
    assert by_res["glossary"].action is Action.CREATE
    conflict = by_res["team/a.md"]
    assert (conflict.action, conflict.rule) == (Action.CONFLICT, "INV-MEM-07")
    assert conflict.target == f"{BASE}/team/a.md"
    assert conflict.reason == (f"{BASE}/team is {found.describe()}; expected a real directory "
                               f"to hold {BASE}/team/a.md")
    # The intermediate itself is neither unlinked nor reported twice.
    assert len(plan.operations) == 2
    assert plan.findings == ()
    assert plan.blocked


def test_o4_owned_link_where_a_directory_is_needed_is_a_conflict_with_a_safe_remedy() -> None:
    # Former config had memory = ["team"]; now it is ["team/a.md"].  [O4]: an intermediate
    # that is anything but a real directory is a CONFLICT for the resource — even aikito's
    # own link; the remedy says it is safe to remove.
    plan = plan_of(resource_set(ref("team/a.md")), view({"team": link(f"{WS}/memory/team")}))
    assert brief(plan) == [("CONFLICT", "INV-MEM-07", ".agents/memory/team/a.md", "link")]
    [op] = plan.operations
    assert op.reason == (f"{BASE}/team is a symlink to '{WS}/memory/team'; expected a real "
                         f"directory to hold {BASE}/team/a.md")
    assert op.remedy is not None and "aikito's link" in op.remedy
    assert f"remove the link {BASE}/team" in op.remedy
    assert plan.blocked


def test_invalid_checkout_root_is_conflict() -> None:
    plan = plan_of(resource_set(ref("glossary")), view(root=Observed(Kind.FILE)))
    [op] = plan.operations
    assert (op.action, op.target) == (Action.CONFLICT, CO)
    assert op.reason == f"{CO} is a regular file; expected a directory"
    assert plan.checkouts[0].state is CheckoutState.INVALID


# =========================================================================== [P2]


def test_p2_owned_stale_link_is_unlinked() -> None:
    plan = plan_of(resource_set(ref("glossary")), view({
        "glossary": link(SRC), "old.md": link(f"{WS}/memory/old.md"),
        "rel.md": link("../../../../ws/memory/rel.md")}))
    assert brief(plan) == [
        ("NOOP", "INV-MEM-10", ".agents/memory/glossary", "link"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/old.md", "link"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/rel.md", "link"),
    ]
    assert plan.operations[1].source == f"{WS}/memory/old.md"
    assert plan.operations[1].resource is None
    assert plan.findings == ()


@pytest.mark.parametrize("literal", [CURRENT_NOTES, LEGACY_NOTES])
def test_p2_stale_notes_link_is_unlinked_when_notes_went_away(literal: str) -> None:
    plan = plan_of(resource_set(ref("glossary")), view({"notes": link(literal)}))
    assert ("UNLINK", "INV-MEM-06", ".agents/memory/notes", "link") in brief(plan)


@pytest.mark.parametrize(("rel", "obs", "found"), [
    ("old.md", Observed(Kind.FILE), "a regular file"),
    (".DS_Store", Observed(Kind.FILE), "a regular file"),
    ("pipe", Observed(Kind.FIFO), "a FIFO"),
    ("elsewhere", link("/elsewhere"), "a symlink to '/elsewhere'"),
    ("other", link(f"{WS}/memory/glossary"), f"a symlink to '{WS}/memory/glossary'"),
    ("dangling", link("nowhere"), "a symlink to 'nowhere'"),
    ("old.md", link(f"{WS}/memory/old.md/"), f"a symlink to '{WS}/memory/old.md/'"),
])
def test_p2_foreign_stale_entry_is_preserved_with_a_warning(
    rel: str, obs: Observed, found: str
) -> None:
    plan = plan_of(resource_set(ref("glossary")), view({rel: obs}))
    assert brief(plan) == [("CREATE", "INV-MEM-01", ".agents/memory/glossary", "link")]
    [finding] = plan.findings
    assert (finding.code, finding.severity) == ("memory.foreign_entry", "warning")
    assert finding.path == f"{BASE}/{rel}"
    assert f"{BASE}/{rel}" in finding.message
    assert found in finding.message
    assert not plan.blocked


def test_p2_directories_emptied_by_unlinks_are_removed_deepest_first() -> None:
    entries = {
        "team": DIR, "team/sub": DIR,
        "team/sub/a.md": link(f"{WS}/memory/team/sub/a.md"),
        "team/b.md": link("../../../../../ws/memory/team/b.md"),
    }
    plan = plan_of(resource_set(ref("glossary")), view(entries))
    assert brief(plan) == [
        ("CREATE", "INV-MEM-01", ".agents/memory/glossary", "link"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/team", "directory"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/team/b.md", "link"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/team/sub", "directory"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/team/sub/a.md", "link"),
    ]
    assert all(op.target != BASE for op in plan.operations)
    # Execution order ([E4]): unlinks, then prunes deepest first, then links.
    order = [plan.operations[i].target.removeprefix(BASE + "/")
             for i in write_order(plan, operations_by_checkout(plan)[plan.checkouts[0].path])]
    assert order == ["team/b.md", "team/sub/a.md", "team/sub", "team", "glossary"]
    assert plan.findings == ()


def test_p2_memory_root_is_never_removed() -> None:
    plan = plan_of(resource_set(), view({"old": link(f"{WS}/memory/old")}))
    assert brief(plan) == [("UNLINK", "INV-MEM-06", ".agents/memory/old", "link")]


def test_p2_ancestor_of_a_desired_target_is_never_pruned() -> None:
    plan = plan_of(resource_set(ref("team/b.md")), view({
        "team": DIR, "team/a.md": link(f"{WS}/memory/team/a.md")}))
    assert brief(plan) == [
        ("UNLINK", "INV-MEM-06", ".agents/memory/team/a.md", "link"),
        ("CREATE", "INV-MEM-01", ".agents/memory/team/b.md", "link"),
    ]


def test_p2_directory_with_a_foreign_entry_is_kept() -> None:
    plan = plan_of(resource_set(), view({
        "team": DIR, "team/a.md": link(f"{WS}/memory/team/a.md"),
        "team/.DS_Store": Observed(Kind.FILE)}))
    assert brief(plan) == [("UNLINK", "INV-MEM-06", ".agents/memory/team/a.md", "link")]
    assert [(f.code, f.path) for f in plan.findings] == [
        ("memory.foreign_entry", f"{BASE}/team/.DS_Store")]


def test_p2_already_empty_directory_is_preserved_with_a_warning() -> None:
    plan = plan_of(resource_set(ref("glossary")), view({
        "empty": DIR, "outer": DIR, "outer/inner": DIR}))
    assert brief(plan) == [("CREATE", "INV-MEM-01", ".agents/memory/glossary", "link")]
    assert [(f.code, f.severity, f.path) for f in plan.findings] == [
        ("memory.empty_directory", "warning", f"{BASE}/empty"),
        ("memory.empty_directory", "warning", f"{BASE}/outer/inner"),
    ]
    assert not plan.blocked


def test_p2_empty_ancestor_of_desired_target_is_silent() -> None:
    plan = plan_of(resource_set(ref("team/a.md")), view({"team": DIR}))
    assert brief(plan) == [("CREATE", "INV-MEM-01", ".agents/memory/team/a.md", "link")]
    assert plan.findings == ()


def test_p2_desired_directory_full_of_owned_links_is_a_conflict() -> None:
    # Former config memory = ["team/a.md"], now ["team"]: a real directory at a desired
    # target is a CONFLICT ([P1], "directory (empty or not)"); it is never pruned, and the
    # blocked plan writes nothing (the stale link inside is listed, not executed).
    plan = plan_of(resource_set(ref("team")), view({
        "team": DIR, "team/a.md": link(f"{WS}/memory/team/a.md")}))
    assert brief(plan) == [
        ("CONFLICT", "INV-MEM-07", ".agents/memory/team", "link"),
        ("UNLINK", "INV-MEM-06", ".agents/memory/team/a.md", "link"),
    ]
    assert plan.blocked


# =========================================================================== [P3]


def test_p3_any_conflict_blocks_the_whole_plan() -> None:
    plan = plan_of(resource_set(ref("glossary")),
                   view(path="/co/a", label="1"),
                   view({"glossary": Observed(Kind.FILE)}, path="/co/b", label="2"))
    assert [op.action for op in plan.operations] == [Action.CREATE, Action.CONFLICT]
    assert plan.blocked
    assert plan.conflicts == (plan.operations[1],)


def test_p3_warnings_never_block() -> None:
    plan = plan_of(resource_set(ref("glossary"), ref("notes", shadowed=True), notes(),
                                findings=(Finding("memory.shadowed", "warning", "x"),)),
                   view({".DS_Store": Observed(Kind.FILE), "empty": DIR,
                         "x": link("/elsewhere")}))
    assert plan.findings and all(f.severity == "warning" for f in plan.findings)
    assert not plan.blocked


# =========================================================================== [P4]


def test_p4_operations_sorted_by_checkout_order_then_target() -> None:
    res = resource_set(ref("b"), ref("a/z"), ref("a/b"), ref("c"))
    plan = plan_of(res, view(path="/co/z", label="1"), view(path="/co/a", label="2"),
                   view(path="/co/m", label="3", state=CheckoutState.OFFLINE))
    targets = [op.target for op in plan.operations]
    expected = [f"{co}/.agents/memory/{r}" for co in ("/co/z", "/co/a", "/co/m")
                for r in ("a/b", "a/z", "b", "c")]
    assert targets == expected
    assert [c.path for c in plan.checkouts] == ["/co/z", "/co/a", "/co/m"]


def test_p4_same_world_gives_an_equal_plan() -> None:
    def make() -> Plan:
        return plan_of(resource_set(ref("glossary"), notes()),
                       view({"notes": link(LEGACY_NOTES), "x": link(f"{WS}/memory/x")}))
    assert make() == make()


# =========================================================================== purity

_EVENTS: list[tuple[str, tuple[object, ...]]] = []
_RECORDING = [False]
_FORBIDDEN = ("open", "os.", "shutil.", "socket.", "subprocess.", "pathlib.", "fcntl.",
              "glob.", "tempfile.", "import")


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _RECORDING[0]:
        _EVENTS.append((event, args))


sys.addaudithook(_audit)  # cannot be removed: it records only while the flag is set


def _plan_recording(**kwargs: Any) -> tuple[Plan, list[tuple[str, tuple[object, ...]]]]:
    load_planner()  # the rooms a planner imports on a conflict's branch only
    _EVENTS.clear()
    _RECORDING[0] = True
    try:
        plan = build_plan(**kwargs)
        plan.summary()
        _ = (plan.blocked, plan.changes, plan.conflicts)
    finally:
        _RECORDING[0] = False
    events = list(_EVENTS)
    _EVENTS.clear()
    return plan, events


def test_audit_hook_sees_io() -> None:
    """The hook itself works: an ``open`` while recording is seen."""
    _EVENTS.clear()
    _RECORDING[0] = True
    try:
        with open(__file__, "rb"):
            pass
    finally:
        _RECORDING[0] = False
    assert any(e == "open" for e, _ in _EVENTS)
    _EVENTS.clear()


def test_planner_does_no_io_on_a_rich_world() -> None:
    res = resource_set(ref("glossary"), ref("team/a.md", problem="unsafe"),
                       ref("notes", shadowed=True), notes(), ref("gone", problem="x",
                                                                 missing=True))
    views = (
        view({"notes": link(LEGACY_NOTES), "old": DIR, "old/x": link(f"{WS}/memory/old/x"),
              "glossary": Observed(Kind.FILE), ".DS_Store": Observed(Kind.FILE),
              "empty": DIR}),
        view(path="/co/b", label="2", state=CheckoutState.OFFLINE),
        view(path="/co/c", label="3", agents=link("/x")),
        view(path="/co/d", label="4", root=Observed(Kind.FILE)),
    )
    plan, events = _plan_recording(
        config=config(("glossary", "team/a.md", "notes", "gone"),
                      tuple(v.path for v in views)),
        workspace=WS, workspace_source="option", resources=res, checkouts=views)
    assert len(plan.operations) > 8
    bad = [(e, a) for e, a in events if e.startswith(_FORBIDDEN)]
    assert bad == []


@given(worlds())
def test_planner_does_no_io_on_any_world(world: World) -> None:
    plan, events = _plan_recording(**world.planner_inputs())
    bad = [(e, a) for e, a in events if e.startswith(_FORBIDDEN)]
    assert bad == []
    assert isinstance(plan, Plan)


def test_planner_source_imports_no_io_modules() -> None:
    tree = ast.parse(inspect.getsource(planner))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"os", "pathlib", "shutil", "subprocess", "socket", "io", "fcntl",
                           "glob", "tempfile"}
    assert imported <= {"__future__", "posixpath", "collections", "aikito_mem"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            assert node.id not in ("open", "os", "pathlib"), node.id


def test_one_observation_pass_then_a_planner_without_io(ws: Workspace) -> None:
    """The project is observed once (``world/``), then every segment is planned from
    that one value with no I/O at all: the planner never observes again."""
    import os

    from aikito_mem.planner.project import plan_project
    from aikito_mem.world import checkouts, observe_project
    from aikito_mem.world.observe import Observer

    ws.add_file("team/a.md")
    ws.add_skill("review")
    ws.write_instructions("demo", "# demo\n")
    ws.add_agent("claude", '[agents.claude]\nproject_instruction_path = ".claude/CLAUDE.md"\n')
    co, gone = ws.checkout("laptop"), f"{ws.root}-gone"
    os.makedirs(f"{co}/.agents/skills")
    os.symlink("/elsewhere", f"{co}/.agents/skills/old")
    ws.write_config("demo", memory=["team/a.md"], paths=[co, gone], skills=["review"])
    project = ws.project("demo")
    observer = Observer()
    slots = checkouts.slots(project.config, observer)
    observed = observe_project(project.config, project.workspace, slots, observer,
                               environ=os.environ, home=project.home or None)
    load_planner()
    _EVENTS.clear()
    _RECORDING[0] = True
    try:
        plan = plan_project(observed, config=project.config, workspace=project.workspace,
                            workspace_source="option", home=project.home)
        plan.summary()
    finally:
        _RECORDING[0] = False
    events = list(_EVENTS)
    _EVENTS.clear()
    assert [(e, a) for e, a in events if e.startswith(_FORBIDDEN)] == []
    assert {op.segment.value for op in plan.operations} == {"skills", "instructions",
                                                             "memory"}
    assert plan == project.plan(identify=False)


def test_every_planner_module_imports_no_io_module() -> None:
    """The whole planner package, not only the memory planner, is pure by its imports:
    nothing of ``world/``, ``executor/`` or ``config/`` (but its pure name rules)."""
    import pkgutil

    import aikito_mem.planner as package

    names = ["", *(f".{info.name}" for info in pkgutil.iter_modules(package.__path__))]
    for name in names:  # the package itself holds rules every planner reads
        module = __import__(f"aikito_mem.planner{name}", fromlist=["_"])
        imported: set[str] = set()
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
        allowed = {"__future__", "posixpath", "collections", "collections.abc", "attrs",
                   "typing",  # TYPE_CHECKING: a view named for the type checker only
                   "aikito_mem.model", "aikito_mem.views", "aikito_mem.values",
                   "aikito_mem.layout", "aikito_mem.planner",
                   "aikito_mem.config.names"}  # the pure name rules ([H3])
        assert {m for m in imported if not m.startswith(("aikito_mem.planner.",
                                                         "aikito_mem.views."))} <= allowed, \
            name


def test_a_memory_only_plan_is_in_segment_checkout_target_order(ws: Workspace) -> None:
    """[G6] [P4]: a project without skills or instruction targets keeps the memory plan's
    own order — checkouts as planned, each by target, an UNLINK first — which is the order
    the project planner sorts every plan into (it does not sort it again), and its
    source checks are the memory plan's, one per path, sorted."""
    import os

    for name in ("b.md", "a.md", "team/c.md"):
        ws.add_file(name)
    ws.add_notes("demo")
    first, second = ws.checkout("first"), ws.checkout("second")
    ws.write_config("demo", memory=["b.md", "team/c.md", "a.md"],
                    paths=[second, f"{ws.root}-gone", first])
    ws.project("demo").sync()
    os.symlink(f"{ws.root}/memory/gone.md", f"{first}/.agents/memory/gone.md")  # stale
    os.unlink(f"{second}/.agents/memory/a.md")  # a CREATE
    plan = ws.project("demo").plan()
    index = {co.path: i for i, co in enumerate(plan.checkouts)}
    assert len(index) == len(plan.checkouts) == 3
    order = sorted(plan.operations, key=lambda op: (index[op.checkout], op.target,
                                                    op.action is not Action.UNLINK))
    assert list(plan.operations) == order
    assert {op.action for op in plan.operations} == {Action.NOOP, Action.CREATE,
                                                     Action.UNLINK, Action.SKIP}
    assert [c.path for c in plan.sources] == sorted({c.path for c in plan.sources})
