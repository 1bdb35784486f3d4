"""Every cell of the [G2] table: the skills segment's pure planner → exact action."""

from __future__ import annotations

import pytest

from aikito_mem.layout import skill_source
from aikito_mem.model import (
    ABSENT,
    Action,
    Kind,
    Observed,
    Resource,
    SegmentName,
)
from aikito_mem.planner.skills import offline, plan_checkout
from aikito_mem.views import SkillsView

WS = "/ws"
CO = "/co"
CFG = "/ws/projects/p/agent.toml"
DIR = Observed(Kind.DIR, dev=1, ino=2)
FILE = Observed(Kind.FILE, dev=1, ino=3)


def link(literal: str) -> Observed:
    return Observed(Kind.LINK, literal, dev=1, ino=4)


def skill(name: str, problem: str | None = None, missing: bool = False) -> Resource:
    return Resource(name, name, skill_source(WS, name), problem=problem, missing=missing)


def plan(entries=(), skills=None, root=DIR, agents=DIR):
    skills = (skill("alpha"),) if skills is None else skills
    return plan_checkout(CO, agents, SkillsView(root, tuple(entries)), tuple(skills), WS, CFG)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (None, Action.CREATE),
        (link("/ws/skills/alpha"), Action.NOOP),
        (link("../../../ws/skills/alpha"), Action.NOOP),  # relative literal normalising to it
        (link("/ws/skills/beta"), Action.CONFLICT),
        (link("/elsewhere/alpha"), Action.CONFLICT),
        (link("/ws/skills/alpha/"), Action.CONFLICT),  # not byte-exact, not a clean relative
        (link("dangling"), Action.CONFLICT),
        (FILE, Action.CONFLICT),
        (DIR, Action.CONFLICT),
        (Observed(Kind.FIFO), Action.CONFLICT),
    ],
)
def test_target_states(entry, expected):
    ops, findings, _ = plan(entries=[] if entry is None else [("alpha", entry)])
    assert [(op.action, op.target) for op in ops] == [(expected, "/co/.agents/skills/alpha")]
    assert ops[0].segment is SegmentName.SKILLS
    assert ops[0].source == "/ws/skills/alpha"
    assert findings == []


@pytest.mark.parametrize(("problem", "missing"), [("source does not exist", True),
                                                  ("source is a regular file", False)])
def test_missing_or_unsafe_source_is_a_conflict(problem, missing):
    ops, _, _ = plan(entries=[("alpha", link("/ws/skills/alpha"))],
                     skills=[skill("alpha", problem, missing)])
    assert [op.action for op in ops] == [Action.CONFLICT]
    assert ops[0].reason == problem
    assert "skills" in (ops[0].remedy or "")


def test_stale_owned_link_is_unlinked_foreign_entries_preserved():
    ops, findings, _ = plan(
        entries=[("old", link("/ws/skills/old")), ("mine", link("/ws/skills/other")),
                 ("notes.txt", FILE), ("dir", DIR)],
        skills=[],
    )
    assert [(op.action, op.target) for op in ops] == [(Action.UNLINK, "/co/.agents/skills/old")]
    assert sorted(f.path for f in findings) == [
        "/co/.agents/skills/dir", "/co/.agents/skills/mine", "/co/.agents/skills/notes.txt"]
    assert {f.severity for f in findings} == {"warning"}


@pytest.mark.parametrize("root", [FILE, link("/elsewhere"), Observed(Kind.FIFO)])
def test_skills_root_not_a_directory_is_one_conflict(root):
    ops, _, dirs = plan(root=root)
    assert [(op.action, op.target) for op in ops] == [(Action.CONFLICT, "/co/.agents/skills")]
    assert dirs == [(".agents", DIR), (".agents/skills", root)]


@pytest.mark.parametrize("agents", [FILE, link("/elsewhere")])
def test_agents_not_a_directory_is_a_conflict_for_skills(agents):
    ops, _, _ = plan(agents=agents, root=ABSENT)
    assert [(op.action, op.target) for op in ops] == [(Action.CONFLICT, "/co/.agents")]


def test_missing_root_creates():
    ops, _, dirs = plan(root=ABSENT, agents=ABSENT)
    assert [op.action for op in ops] == [Action.CREATE]
    assert dirs == [(".agents", ABSENT), (".agents/skills", ABSENT)]


def test_nothing_configured_and_nothing_there_plans_nothing():
    assert plan(skills=[], root=ABSENT, agents=FILE) == ([], [], [])


def test_offline_skips_each_skill():
    ops = offline(CO, "path does not exist", (skill("a"), skill("b")))
    assert [(op.action, op.rule, op.target) for op in ops] == [
        (Action.SKIP, "G6", "/co/.agents/skills/a"), (Action.SKIP, "G6", "/co/.agents/skills/b")]


def test_operations_sorted_by_target():
    ops, _, _ = plan(entries=[("zed", link("/ws/skills/zed"))],
                     skills=[skill("beta"), skill("alpha")])
    assert [op.target.rsplit("/", 1)[1] for op in ops] == ["alpha", "beta", "zed"]


@pytest.mark.parametrize("root", [ABSENT, DIR, FILE, link("/x")])
@pytest.mark.parametrize("agents", [ABSENT, DIR, FILE, link("/x")])
def test_what_the_project_planner_skips_plans_nothing(root, agents):
    """[§12]: the project planner does not even import this planner when
    :func:`~aikito_mem.planner.project.skills_to_plan` says there is nothing to plan — and
    indeed it would plan nothing, whatever ``.agents`` and ``.agents/skills`` are."""
    from aikito_mem.planner.project import skills_to_plan

    view = SkillsView(root, ())
    assert not skills_to_plan((), view)
    assert plan_checkout(CO, agents, view, (), WS, CFG) == ([], [], [])
    assert skills_to_plan((skill("alpha"),), view)
    assert skills_to_plan((), SkillsView(DIR, (("old", link("/ws/skills/old")),)))
