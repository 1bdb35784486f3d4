"""Every cell of the [G4] table: the instructions segment's pure planner → exact action."""

from __future__ import annotations

import pytest

from aikito_mem.model import (
    ABSENT,
    Action,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    PlannedTarget,
    SegmentName,
)
from aikito_mem.planner.instructions import offline, plan_checkout
from aikito_mem.views import InstructionsView, InstructionTargetView

CO = "/co"
SRC = "/ws/projects/p/AGENTS.md"
DIR = Observed(Kind.DIR, dev=1, ino=2)
FILE = Observed(Kind.FILE, dev=1, ino=3)
OWNED = Observed(Kind.LINK, SRC, dev=1, ino=4)
FOREIGN = Observed(Kind.LINK, "/somewhere/CLAUDE.md", dev=1, ino=5)

CONTENT, EMPTY, ABSENT_SRC, UNSAFE = (InstructionState.CONTENT, InstructionState.EMPTY,
                                      InstructionState.ABSENT, InstructionState.UNSAFE)


def source(state):
    return InstructionSource(SRC, state, "AGENTS.md leaves the workspace"
                             if state is UNSAFE else None)


def target(observed=ABSENT, parent=DIR, detected=False, rel=".claude/CLAUDE.md"):
    parents = ((".claude", parent),) if "/" in rel else ()
    return InstructionTargetView(rel, ("claude",), detected, observed, parents)


def actions(state, tgt, legacy=ABSENT):
    ops, findings, _ = plan_checkout(CO, source(state), InstructionsView((tgt,), legacy))
    assert findings == []
    assert all(op.segment is SegmentName.INSTRUCTIONS for op in ops)
    return [op.action for op in ops]


# (source state, target observation, parent, detected) → actions
CELLS = [
    (CONTENT, ABSENT, DIR, False, [Action.CREATE]),
    (CONTENT, ABSENT, ABSENT, True, [Action.CREATE]),
    (CONTENT, ABSENT, ABSENT, False, [Action.SKIP]),
    (CONTENT, OWNED, DIR, False, [Action.NOOP]),
    (CONTENT, Observed(Kind.LINK, "../../ws/projects/p/AGENTS.md"), DIR, False, [Action.NOOP]),
    (CONTENT, FILE, DIR, True, [Action.CONFLICT]),
    (CONTENT, DIR, DIR, True, [Action.CONFLICT]),
    (CONTENT, FOREIGN, DIR, True, [Action.CONFLICT]),
    (CONTENT, ABSENT, FILE, True, [Action.CONFLICT]),
    (CONTENT, ABSENT, Observed(Kind.LINK, "/elsewhere"), True, [Action.CONFLICT]),
    (EMPTY, OWNED, DIR, False, [Action.UNLINK]),
    (ABSENT_SRC, OWNED, DIR, False, [Action.UNLINK]),
    (EMPTY, FILE, DIR, True, []),
    (EMPTY, FOREIGN, DIR, True, []),
    (EMPTY, ABSENT, DIR, True, []),
    (ABSENT_SRC, ABSENT, ABSENT, True, []),
    (ABSENT_SRC, DIR, DIR, True, []),
    (UNSAFE, ABSENT, DIR, True, [Action.CONFLICT]),
    (UNSAFE, OWNED, DIR, True, [Action.CONFLICT]),
    (UNSAFE, FILE, DIR, True, [Action.CONFLICT]),
]


@pytest.mark.parametrize(("state", "observed", "parent", "detected", "expected"), CELLS)
def test_g4_table(state, observed, parent, detected, expected):
    assert actions(state, target(observed, parent, detected)) == expected


def test_root_level_target_needs_no_detection():
    assert actions(CONTENT, target(rel="AGENTS.md")) == [Action.CREATE]


def test_conflict_keeps_the_users_file_and_says_so():
    ops, _, _ = plan_checkout(CO, source(CONTENT), InstructionsView((target(FILE),)))
    (op,) = ops
    assert op.target == "/co/.claude/CLAUDE.md"
    assert op.reason == f"found a regular file; expected a symlink to {SRC!r}"
    assert "never overwrites" in (op.remedy or "")


@pytest.mark.parametrize("state", [CONTENT, EMPTY, ABSENT_SRC])
def test_legacy_owned_link_is_unlinked(state):
    ops, _, _ = plan_checkout(CO, source(state), InstructionsView((), OWNED))
    assert [(op.action, op.target) for op in ops] == [(Action.UNLINK, "/co/.agents/AGENTS.md")]


@pytest.mark.parametrize("legacy", [FILE, FOREIGN, ABSENT])
def test_legacy_entry_not_owned_is_left(legacy):
    assert plan_checkout(CO, source(CONTENT), InstructionsView((), legacy))[0] == []


def test_parents_recorded_for_verification():
    _, _, dirs = plan_checkout(CO, source(CONTENT), InstructionsView((target(),)))
    assert dirs == [(".claude", DIR)]


def test_offline_skips_each_target():
    ops = offline(CO, "path does not exist",
                  (PlannedTarget(".claude/CLAUDE.md"), PlannedTarget("AGENTS.md")),
                  source(CONTENT))
    assert [(op.action, op.target) for op in ops] == [
        (Action.SKIP, "/co/.claude/CLAUDE.md"), (Action.SKIP, "/co/AGENTS.md")]


@pytest.mark.parametrize("detected", [True, False])
def test_a_target_the_kernel_could_not_name_again_is_never_created(detected):
    """[E5]: a target whose whole path reaches PATH_MAX would be created through directory
    descriptors and then make every later run fail (ENAMETOOLONG): a CONFLICT naming the
    length, never a CREATE; one byte shorter is created as usual."""
    from aikito_mem.layout import PATH_MAX

    deep = "/".join(["d" * 200] * 19)
    rel = f"{deep}/{'x' * (PATH_MAX + 2 - len(f'{CO}/{deep}/') - 3)}.md"
    assert len(f"{CO}/{rel}") == PATH_MAX + 2  # ".md" past the limit
    ops, _, _ = plan_checkout(CO, source(CONTENT), InstructionsView(
        (target(parent=ABSENT, detected=detected, rel=rel),), ABSENT))
    assert [op.action for op in ops] == [Action.CONFLICT]
    assert "more than the 4095 a path can have" in ops[0].reason
    short = rel[:PATH_MAX - len(CO) - 2]
    assert len(f"{CO}/{short}") == PATH_MAX - 1
    assert actions(CONTENT, target(parent=DIR, rel=short)) == [Action.CREATE]



_SEEN = [ABSENT, DIR, FILE, OWNED, FOREIGN]


@pytest.mark.parametrize("legacy", [ABSENT, FILE, OWNED, FOREIGN])
@pytest.mark.parametrize("state", [CONTENT, EMPTY, ABSENT_SRC, UNSAFE])
@pytest.mark.parametrize("seen", _SEEN)
@pytest.mark.parametrize("relink", [ABSENT, OWNED, FOREIGN])
@pytest.mark.parametrize("parent", [DIR, ABSENT, FILE])
def test_what_the_project_planner_skips_plans_nothing(legacy, state, seen, relink, parent):
    """[§12]: the project planner does not even import this planner when
    :func:`~aikito_mem.planner.project.instructions_to_plan` says there is nothing to
    plan — and then it would indeed plan nothing (with no target, or with targets, in
    every state of the source, the targets, their relink names and the legacy link)."""
    from aikito_mem.planner.project import instructions_to_plan

    tgt = InstructionTargetView(".claude/CLAUDE.md", ("claude",), False, seen,
                                ((".claude", parent),), relink)
    for view in (InstructionsView((), legacy), InstructionsView((tgt,), legacy)):
        if not instructions_to_plan(source(state), view):
            assert plan_checkout(CO, source(state), view) == ([], [], [])
    # What a memory-only project sees: the default target, nothing there, no AGENTS.md.
    assert not instructions_to_plan(source(ABSENT_SRC), InstructionsView((target(),)))
    assert instructions_to_plan(source(CONTENT), InstructionsView((target(),)))
