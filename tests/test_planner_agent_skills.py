"""Every cell of [G2]'s table for a per-agent skills directory [N1] (Claude Code's
``.claude/skills``): the pure planner → the exact action, plus the directory's own
states (missing and detected or not, a symlink, a file, a parent in the way)."""

from __future__ import annotations

import ast
import inspect
import sys

import pytest

from aikito_mem.layout import skill_source
from aikito_mem.model import (
    ABSENT,
    Action,
    Kind,
    Observed,
    PlannedTarget,
    Resource,
    SegmentName,
)
from aikito_mem.planner.agent_skills import offline, plan_dir
from aikito_mem.views.agent_skills import AgentSkillsView
from tests.helpers.pure import load_planner

WS = "/ws"
CO = "/co"
CFG = "/ws/projects/p/agent.toml"
DIR = Observed(Kind.DIR, dev=1, ino=2)
FILE = Observed(Kind.FILE, dev=1, ino=3)
REL = ".claude/skills"
BASE = f"{CO}/{REL}"


def link(literal: str) -> Observed:
    return Observed(Kind.LINK, literal, dev=1, ino=4)


def skill(name: str, problem: str | None = None, missing: bool = False) -> Resource:
    return Resource(name, name, skill_source(WS, name), problem=problem, missing=missing)


def view(entries=(), root=DIR, parents=((".claude", DIR),), detected=False,
         agents=("claude-code",)) -> AgentSkillsView:
    return AgentSkillsView(REL, agents, detected, root, tuple(entries), tuple(parents))


def plan(v: AgentSkillsView | None = None, skills=None):
    skills = (skill("alpha"),) if skills is None else skills
    return plan_dir(CO, v or view(), tuple(skills), WS, CFG)


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (None, Action.CREATE),
        (link("/ws/skills/alpha"), Action.NOOP),
        (link("../../../ws/skills/alpha"), Action.NOOP),  # relative, normalising to it
        (link("/ws/skills/beta"), Action.CONFLICT),
        (link("/elsewhere/alpha"), Action.CONFLICT),
        (link("/ws/skills/alpha/"), Action.CONFLICT),
        (link("dangling"), Action.CONFLICT),
        (FILE, Action.CONFLICT),
        (DIR, Action.CONFLICT),  # the agent's own skill of the same name: preserved
        (Observed(Kind.FIFO), Action.CONFLICT),
    ],
)
def test_target_states(entry, expected):
    ops, findings, dirs = plan(view(entries=[] if entry is None else [("alpha", entry)]))
    assert [(op.action, op.target) for op in ops] == [(expected, f"{BASE}/alpha")]
    assert ops[0].segment is SegmentName.SKILLS and ops[0].rule == "N1"
    assert ops[0].source == "/ws/skills/alpha"
    assert findings == []
    assert dirs == [(".claude", DIR), (REL, DIR)]


@pytest.mark.parametrize(("problem", "missing"), [("source does not exist", True),
                                                  ("source is a regular file", False)])
def test_missing_or_unsafe_source_is_a_conflict(problem, missing):
    ops, _, _ = plan(view(entries=[("alpha", link("/ws/skills/alpha"))]),
                     skills=[skill("alpha", problem, missing)])
    assert [op.action for op in ops] == [Action.CONFLICT]
    assert ops[0].reason == problem


def test_an_owned_link_of_a_deselected_skill_is_unlinked():
    ops, findings, _ = plan(view(entries=[("old", link("/ws/skills/old"))]), skills=[])
    assert [(op.action, op.target, op.source) for op in ops] == [
        (Action.UNLINK, f"{BASE}/old", "/ws/skills/old")]
    assert findings == []


@pytest.mark.parametrize("entry", [DIR, FILE, link("/ws/skills/other"), link("/x")])
def test_the_agents_own_entries_are_preserved_with_a_finding(entry):
    ops, findings, _ = plan(view(entries=[("mine", entry)]))
    assert [op.action for op in ops] == [Action.CREATE]  # alpha; never blocking
    assert [(f.code, f.severity, f.path) for f in findings] == [
        ("skills.foreign_entry", "warning", f"{BASE}/mine")]
    assert "claude-code's own" in findings[0].message
    # [L1]: an agent's own skill is often committed; no hint ever says to remove it.
    assert findings[0].message.endswith("it is left untouched")
    assert "remove" not in findings[0].message


def test_missing_directory_and_agent_detected_creates():
    ops, _, dirs = plan(view(root=ABSENT, detected=True))
    assert [(op.action, op.target) for op in ops] == [(Action.CREATE, f"{BASE}/alpha")]
    assert "claude-code detected" in ops[0].reason
    assert dirs == [(".claude", DIR), (REL, ABSENT)]


@pytest.mark.parametrize("parents", [((".claude", DIR),), ((".claude", ABSENT),)])
def test_missing_directory_and_agent_not_detected_skips(parents):
    ops, findings, dirs = plan(view(root=ABSENT, parents=parents, detected=False),
                               skills=[skill("alpha"), skill("beta")])
    assert [(op.action, op.target) for op in ops] == [
        (Action.SKIP, f"{BASE}/alpha"), (Action.SKIP, f"{BASE}/beta")]
    assert all(op.reason.startswith("agent not detected") for op in ops)
    assert findings == []
    assert dirs[-1] == (REL, ABSENT)


@pytest.mark.parametrize(
    ("root", "parents", "where"),
    [
        (link("/ws/skills"), ((".claude", DIR),), REL),  # the directory is a symlink
        (FILE, ((".claude", DIR),), REL),
        (ABSENT, ((".claude", link("/elsewhere")),), ".claude"),  # a parent is a symlink
        (ABSENT, ((".claude", FILE),), ".claude"),
    ],
)
def test_a_directory_that_is_not_a_real_directory_is_one_conflict(root, parents, where):
    ops, _, dirs = plan(view(root=root, parents=parents, detected=True))
    assert [(op.action, op.target) for op in ops] == [(Action.CONFLICT, f"{CO}/{where}")]
    assert "expected a real directory" in ops[0].reason
    assert "aikito never writes through or replaces it" in (ops[0].remedy or "")
    assert where in [rel for rel, _ in dirs]  # recorded: verification re-checks it


def test_nothing_selected_and_nothing_there_plans_nothing():
    assert plan(view(root=ABSENT), skills=[]) == ([], [], [])
    # Not even a symlinked directory is reported when no skill would go there.
    assert plan(view(root=link("/x")), skills=[]) == ([], [], [])


def test_two_agents_one_directory():
    ops, _, _ = plan(view(root=ABSENT, detected=True, agents=("amp", "codex-ish")))
    assert [op.action for op in ops] == [Action.CREATE]
    assert "amp, codex-ish detected" in ops[0].reason


def test_offline_skips_every_skill_of_every_directory():
    dirs = (PlannedTarget(".claude/skills", ("claude-code",)),
            PlannedTarget(".roo/skills", ("roo",)))
    ops = offline(CO, "path does not exist", dirs, (skill("alpha"),))
    assert [(op.action, op.target) for op in ops] == [
        (Action.SKIP, f"{CO}/.claude/skills/alpha"), (Action.SKIP, f"{CO}/.roo/skills/alpha")]


# ------------------------------------------------------------------------------ purity

_EVENTS: list[str] = []
_RECORDING = [False]


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _RECORDING[0]:
        _EVENTS.append(event)


sys.addaudithook(_audit)  # records only while the flag is set


def test_the_planner_does_no_io():
    views = [view(entries=[("alpha", link("/ws/skills/alpha")), ("mine", DIR),
                           ("old", link("/ws/skills/old"))]),
             view(root=ABSENT, detected=True), view(root=ABSENT),
             view(root=link("/x")), view(parents=((".claude", FILE),))]
    load_planner()  # the rooms a planner imports on a conflict's branch only
    _EVENTS.clear()
    _RECORDING[0] = True
    try:
        for v in views:
            plan(v, skills=[skill("alpha"), skill("beta", "source does not exist", True)])
        offline(CO, "gone", (PlannedTarget(REL, ("claude-code",)),), (skill("alpha"),))
    finally:
        _RECORDING[0] = False
    forbidden = ("open", "os.", "shutil.", "socket.", "subprocess.", "pathlib.", "fcntl.",
                 "glob.", "tempfile.", "import")
    assert [e for e in _EVENTS if e.startswith(forbidden)] == []


def test_the_planner_imports_no_io_module():
    import aikito_mem.planner.agent_skills as module

    tree = ast.parse(inspect.getsource(module))
    imported = {(n.module or "").split(".")[0] for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom)}
    imported |= {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
    assert imported <= {"__future__", "aikito_mem"}


def test_a_skills_directory_the_kernel_could_not_name_again_is_never_created():
    """[E5]: a per-agent link whose whole path reaches PATH_MAX is a CONFLICT for every
    skill of that directory, never created (every later run would fail to look at it)."""
    from aikito_mem.layout import PATH_MAX

    rel = "/".join(["d" * 200] * 20)
    v = AgentSkillsView(rel, ("claude-code",), True, ABSENT, (),
                        ((rel.split("/")[0], ABSENT),))
    name = "s" * (PATH_MAX - len(f"{CO}/{rel}/"))
    assert len(f"{CO}/{rel}/{name}") == PATH_MAX
    ops, _, _ = plan_dir(CO, v, (skill(name), skill("alpha")), WS, CFG)
    assert [(op.action, op.target.rsplit("/", 1)[1]) for op in ops] == [
        (Action.CONFLICT, name), (Action.CONFLICT, "alpha")]
    assert "more than the 4095 a path can have" in ops[0].reason
    fits, _, _ = plan_dir(CO, v, (skill(name[:-1]),), WS, CFG)
    assert [op.action for op in fits] == [Action.CREATE]
