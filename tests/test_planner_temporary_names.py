"""The engine's temporary names and the old root, cell by cell, in every sync planner
(pure tables, no filesystem):

- [L8]: what is at a relink name ``.NAME.aikito-relink`` ([L4]) — the engine's own
  leftover (a link whose literal is a canonical path a link at NAME is owned for) is an
  UNLINK; anything else there (a file, a directory, another link) is a CONFLICT naming
  that entry, so the dry run says what the real run does (it used to be a warning or
  nothing, and every real relink then stopped stale);
- [L4] + [P2]: with ``--moved-from OLD``, a stale link whose literal is byte-exactly
  ``OLD`` + the canonical remainder of its own place (a reference, skill or instructions
  since dropped) is the engine's and is UNLINKed; without the flag it stays a foreign
  entry.
"""

from __future__ import annotations

import pytest

from aikito_mem.layout import relink_name
from aikito_mem.model import (
    ABSENT,
    Action,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    Resource,
)
from aikito_mem.planner import instructions as planner_instructions
from aikito_mem.planner import skills as planner_skills
from aikito_mem.planner.memory import build_plan
from aikito_mem.views import InstructionsView, InstructionTargetView, SkillsView
from tests.helpers import pure

OLD = "/old-ws"
WS = pure.WS
CO = pure.CO
DIR = Observed(Kind.DIR, None, 1, 2)
FILE = Observed(Kind.FILE, None, 1, 3)


def link(literal: str) -> Observed:
    return Observed(Kind.LINK, literal, 1, 7)


# =================================================================== memory


def memory(entries: dict[str, Observed], *refs: str, moved_from: str | None = None
           ) -> list[tuple[Action, str]]:
    resources = pure.resource_set(*(pure.ref(r) for r in refs))
    plan = build_plan(config=pure.config(tuple(refs)), workspace=WS,
                      workspace_source="option", resources=resources,
                      checkouts=(pure.view(entries),), moved_from=moved_from)
    return [(op.action, op.target.removeprefix(f"{pure.BASE}/")) for op in plan.operations]


TEMP = relink_name("a.md")
NESTED = f"team/{relink_name('b.md')}"


@pytest.mark.parametrize(("entry", "moved_from", "expected"), [
    # The engine's own leftover: its literal is the canonical path of a.md.
    (link(f"{WS}/memory/a.md"), None, Action.UNLINK),
    (link(f"{WS}/memory/a.md"), OLD, Action.UNLINK),
    # Anything else at the name: a CONFLICT, with or without --moved-from.
    (FILE, None, Action.CONFLICT),
    (FILE, OLD, Action.CONFLICT),
    (DIR, None, Action.CONFLICT),
    (Observed(Kind.FIFO), OLD, Action.CONFLICT),
    (link(f"{WS}/memory/other.md"), None, Action.CONFLICT),  # another resource's path
    (link("/elsewhere/a.md"), OLD, Action.CONFLICT),
])
def test_memory_relink_name(entry: Observed, moved_from: str | None, expected: Action
                            ) -> None:
    ops = memory({"a.md": link(f"{OLD}/memory/a.md"), TEMP: entry}, "a.md",
                 moved_from=moved_from)
    assert (expected, TEMP) in ops
    relink = Action.CREATE if moved_from else Action.CONFLICT  # the target itself
    assert (relink, "a.md") in ops


def test_memory_relink_name_of_a_nested_target_and_of_no_target() -> None:
    """Any relink name is the engine's, at any depth, whether or not NAME is wanted; a
    directory there is never pruned (it is the CONFLICT)."""
    ops = memory({"team": DIR, NESTED: FILE, "gone": DIR, f"gone/{relink_name('x')}": DIR},
                 "team/b.md")
    assert (Action.CONFLICT, NESTED) in ops
    assert (Action.CONFLICT, f"gone/{relink_name('x')}") in ops
    assert not [t for a, t in ops if a is Action.UNLINK]


def test_memory_relink_conflict_names_the_entry_and_a_remedy() -> None:
    resources = pure.resource_set(pure.ref("a.md"))
    plan = build_plan(config=pure.config(("a.md",)), workspace=WS, workspace_source="o",
                      resources=resources, checkouts=(pure.view({TEMP: FILE}),))
    op = next(op for op in plan.operations if op.action is Action.CONFLICT)
    assert op.target == f"{pure.BASE}/{TEMP}"
    assert "relink name" in op.reason and f"{pure.BASE}/a.md" in op.reason
    assert op.remedy is not None and op.target in op.remedy
    assert plan.blocked  # the segment writes nothing
    assert not [f for f in plan.findings if f.path == op.target]  # not also a warning


@pytest.mark.parametrize(("rel", "literal", "moved_from", "expected"), [
    ("gone.md", f"{OLD}/memory/gone.md", OLD, Action.UNLINK),  # [L4] + [P2]
    ("team/gone.md", f"{OLD}/memory/team/gone.md", OLD, Action.UNLINK),
    ("notes", f"{OLD}/projects/demo/memory/notes", OLD, Action.UNLINK),
    ("notes", f"{OLD}/memory/demo/notes", OLD, Action.UNLINK),  # the legacy notes
    ("gone.md", f"{OLD}/memory/gone.md", None, None),  # without the flag: foreign
    ("gone.md", f"{OLD}/memory/other.md", OLD, None),  # another resource's remainder
    ("gone.md", f"{OLD}//memory/gone.md", OLD, None),  # byte-exact only
    ("gone.md", "/elsewhere/memory/gone.md", OLD, None),
])
def test_memory_stale_link_into_the_old_root(rel: str, literal: str,
                                             moved_from: str | None,
                                             expected: Action | None) -> None:
    entries = {rel: link(literal)}
    if "/" in rel:
        entries["team"] = DIR
    resources = pure.resource_set(pure.ref("a.md"))
    plan = build_plan(config=pure.config(("a.md",)), workspace=WS, workspace_source="o",
                      resources=resources, checkouts=(pure.view(entries),),
                      moved_from=moved_from)
    ops = [op for op in plan.operations if op.target == f"{pure.BASE}/{rel}"]
    if expected is None:
        assert ops == []
        assert [f.code for f in plan.findings if f.path == f"{pure.BASE}/{rel}"] == [
            "memory.foreign_entry"]
        return
    assert [op.action for op in ops] == [expected]
    assert ops[0].observed.literal == literal
    assert OLD in ops[0].reason
    if "/" in rel:  # the directory the unlink empties is pruned too
        assert f"{pure.BASE}/team" in {op.target for op in plan.operations}


# =================================================================== skills


def skills(entries: dict[str, Observed], *names: str, moved_from: str | None = None
           ) -> list[tuple[Action, str]]:
    res = tuple(Resource(n, n, f"{WS}/skills/{n}") for n in names)
    ops, _, _ = planner_skills.plan_checkout(
        CO, DIR, SkillsView(DIR, tuple(sorted(entries.items()))), res, WS, pure.CFG,
        moved_from=moved_from)
    return [(op.action, op.target.removeprefix(f"{CO}/.agents/skills/")) for op in ops]


@pytest.mark.parametrize(("entry", "expected"), [
    (link(f"{WS}/skills/review"), Action.UNLINK),
    (FILE, Action.CONFLICT),
    (DIR, Action.CONFLICT),
    (link(f"{WS}/skills/other"), Action.CONFLICT),
])
def test_skills_relink_name(entry: Observed, expected: Action) -> None:
    temp = relink_name("review")
    for moved_from in (None, OLD):
        ops = skills({"review": link(f"{OLD}/skills/review"), temp: entry}, "review",
                     moved_from=moved_from)
        assert (expected, temp) in ops


@pytest.mark.parametrize(("literal", "moved_from", "expected"), [
    (f"{OLD}/skills/gone", OLD, [(Action.UNLINK, "gone")]),
    (f"{OLD}/skills/gone", None, []),
    (f"{OLD}/skills/review", OLD, []),  # another skill's remainder
])
def test_skills_stale_link_into_the_old_root(literal: str, moved_from: str | None,
                                            expected: list[tuple[Action, str]]) -> None:
    ops = skills({"gone": link(literal)}, moved_from=moved_from)
    assert ops == expected


# =================================================================== instructions


SRC = f"{WS}/projects/demo/AGENTS.md"


def instructions(state: InstructionState, observed: Observed, relink: Observed,
                 moved_from: str | None = None) -> list[tuple[Action, str]]:
    tgt = InstructionTargetView("AGENTS.md", ("codex",), False, observed, (), relink)
    ops, _, _ = planner_instructions.plan_checkout(
        CO, InstructionSource(SRC, state, None), InstructionsView((tgt,)),
        workspace=WS, moved_from=moved_from)
    return [(op.action, op.target.removeprefix(f"{CO}/")) for op in ops]


TEMP_I = relink_name("AGENTS.md")


@pytest.mark.parametrize("state", [InstructionState.CONTENT, InstructionState.EMPTY,
                                   InstructionState.ABSENT])
@pytest.mark.parametrize(("relink", "expected"), [
    (link(SRC), Action.UNLINK),
    (FILE, Action.CONFLICT),
    (DIR, Action.CONFLICT),
    (link("/elsewhere/AGENTS.md"), Action.CONFLICT),
])
def test_instructions_relink_name(state: InstructionState, relink: Observed,
                                  expected: Action) -> None:
    """Whatever the source's state and whatever is at the target: a relink-name entry is
    planned (the project planner does not skip the instructions planner for it)."""
    from aikito_mem.planner.project import instructions_to_plan

    for observed in (ABSENT, link(SRC), link(f"{OLD}/projects/demo/AGENTS.md")):
        view = InstructionsView((InstructionTargetView("AGENTS.md", (), False, observed,
                                                       (), relink),))
        assert instructions_to_plan(InstructionSource(SRC, state, None), view)
        assert (expected, TEMP_I) in instructions(state, observed, relink, OLD)


@pytest.mark.parametrize(("state", "moved_from", "expected"), [
    (InstructionState.EMPTY, OLD, [(Action.UNLINK, "AGENTS.md")]),
    (InstructionState.ABSENT, OLD, [(Action.UNLINK, "AGENTS.md")]),
    (InstructionState.EMPTY, None, []),
    (InstructionState.CONTENT, OLD, [(Action.CREATE, "AGENTS.md")]),  # the relink
])
def test_instructions_link_into_the_old_root_of_a_dropped_source(
        state: InstructionState, moved_from: str | None,
        expected: list[tuple[Action, str]]) -> None:
    """[L4] + [P2]: the project's AGENTS.md emptied or removed since the move — the link
    into OLD is the engine's, not left dangling, once OLD is named."""
    assert instructions(state, link(f"{OLD}/projects/demo/AGENTS.md"), ABSENT,
                        moved_from) == expected
