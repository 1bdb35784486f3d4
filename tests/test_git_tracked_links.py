"""[L1] for a committed symlink: git tracks a symlink as a file (mode 120000), so a
link this workspace does not own ([O1]) at a skills, per-agent skills or instruction
target that git tracks is the repository's own — SKIP "tracked by git" with
``git.tracked_target``, exactly like a committed file; an owned link at a tracked path
stays NOOP; an untracked foreign link stays a CONFLICT; a memory target stays a CONFLICT
saying it is tracked.  The pure tables per segment, the observing side's question (owned
links are never asked about), and real repositories with ``CLAUDE.md -> AGENTS.md``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aikito_mem.layout import skill_source
from aikito_mem.model import (
    ABSENT,
    Action,
    CheckoutState,
    InstructionSource,
    InstructionState,
    Kind,
    Observed,
    Resource,
    ResourceSet,
)
from aikito_mem.planner import agent_skills as planner_agent_skills
from aikito_mem.planner import instructions as planner_instructions
from aikito_mem.planner import skills as planner_skills
from aikito_mem.views import (
    CheckoutView,
    InstructionsView,
    InstructionTargetView,
    SkillsView,
)
from aikito_mem.views.agent_skills import AgentSkillsView
from aikito_mem.world.segments import occupied_targets
from tests.helpers.cli import invoke
from tests.helpers.gitrepo import git, init_repo, needs_git, status
from tests.helpers.workspace import WS

W, CO = "/ws", "/co"
CFG = "/ws/projects/p/agent.toml"
SRC = "/ws/projects/p/AGENTS.md"
DIR = Observed(Kind.DIR, None, 1, 2)


def link(literal: str) -> Observed:
    return Observed(Kind.LINK, literal, 1, 7)


def skill(name: str = "alpha", **kw: object) -> Resource:
    return Resource(name, name, skill_source(W, name), **kw)  # type: ignore[arg-type]


# The cells, per segment: (what is at the target, whether git tracks the target, the
# action).  A link git tracks is the repository's; ownership is decided first.
SKILL_CELLS = [
    (link("../../repo-skills/alpha"), True, Action.SKIP),  # a committed foreign link
    (link("/elsewhere/alpha"), True, Action.SKIP),
    (link("dangling"), True, Action.SKIP),
    (link("/ws/skills/alpha"), True, Action.NOOP),  # an owned link the user committed
    (link("../../../ws/skills/alpha"), True, Action.NOOP),  # relative, normalising to it
    (link("/elsewhere/alpha"), False, Action.CONFLICT),  # untracked: as before
    (link("/ws/skills/alpha"), False, Action.NOOP),
]


def _check(ops: list, findings: list, target: str, tracked: bool, expected: Action,
           rule: str) -> None:
    [op] = [op for op in ops if op.target == target]
    assert op.action is expected
    codes = [f.code for f in findings if f.path == target]
    if expected is Action.SKIP:
        assert (op.rule, op.reason) == ("L1", "tracked by git")
        assert codes == ["git.tracked_target"]
        [finding] = [f for f in findings if f.path == target]
        assert finding.severity == "warning" and "a symlink" in finding.message
        assert not any(w in finding.message for w in ("adopt", "move", "remove", "delete"))
        assert op.remedy is None
    else:
        assert op.rule == rule and codes == []
    if expected is Action.CONFLICT:  # untracked: the link's own remedy, not a file's
        assert f"remove the link {target} if you no longer need it" in (op.remedy or "")
        assert "adopt" not in (op.remedy or "")


@pytest.mark.parametrize(("entry", "tracked", "expected"), SKILL_CELLS)
def test_skills_cells(entry: Observed, tracked: bool, expected: Action) -> None:
    target = f"{CO}/.agents/skills/alpha"
    view = SkillsView(DIR, (("alpha", entry),))
    ops, findings, _ = planner_skills.plan_checkout(
        CO, DIR, view, (skill(),), W, CFG, frozenset({target} if tracked else ()))
    _check(ops, findings, target, tracked, expected, "G2")


@pytest.mark.parametrize(("entry", "tracked", "expected"), [
    (link("../../.agents/skills/alpha"), True, Action.SKIP),  # the usual committed link
    *SKILL_CELLS[1:3],
    (link("/ws/skills/alpha"), True, Action.NOOP),
    (link("../../../ws/skills/alpha"), True, Action.NOOP),
    *SKILL_CELLS[5:],
])
def test_agent_skills_cells(entry: Observed, tracked: bool, expected: Action) -> None:
    target = f"{CO}/.claude/skills/alpha"
    view = AgentSkillsView(".claude/skills", ("claude",), False, DIR, (("alpha", entry),),
                           ((".claude", DIR),))
    ops, findings, _ = planner_agent_skills.plan_dir(
        CO, view, (skill(),), W, CFG, frozenset({target} if tracked else ()))
    _check(ops, findings, target, tracked, expected, "N1")


@pytest.mark.parametrize(("entry", "tracked", "expected"), [
    (link("AGENTS.md"), True, Action.SKIP),  # CLAUDE.md -> AGENTS.md, committed
    (link("/elsewhere/AGENTS.md"), True, Action.SKIP),
    (link("dangling"), True, Action.SKIP),
    (link(SRC), True, Action.NOOP),
    (link("../ws/projects/p/AGENTS.md"), True, Action.NOOP),
    (link("AGENTS.md"), False, Action.CONFLICT),
    (link(SRC), False, Action.NOOP),
])
def test_instructions_cells(entry: Observed, tracked: bool, expected: Action) -> None:
    target = f"{CO}/CLAUDE.md"
    source = InstructionSource(SRC, InstructionState.CONTENT)
    view = InstructionsView((InstructionTargetView("CLAUDE.md", ("claude",), False, entry),))
    ops, findings, _ = planner_instructions.plan_checkout(
        CO, source, view, frozenset({target} if tracked else ()))
    _check(ops, findings, target, tracked, expected, "G4")
    if expected is Action.CONFLICT:  # a link is never to be moved into the workspace
        assert f"into {SRC}" not in (ops[0].remedy or "")


def test_a_tracked_link_with_a_missing_skill_source_is_still_its_conflict() -> None:
    target = f"{CO}/.agents/skills/alpha"
    view = SkillsView(DIR, (("alpha", link("/elsewhere")),))
    ops, findings, _ = planner_skills.plan_checkout(
        CO, DIR, view, (skill(problem="source does not exist", missing=True),), W, CFG,
        frozenset({target}))
    assert [(op.action, op.reason) for op in ops] == [
        (Action.CONFLICT, "source does not exist")]
    assert findings == []


def test_moved_from_relinks_a_tracked_link_of_the_old_root() -> None:
    """Ownership comes first: with ``--moved-from OLD`` a link of OLD's is this
    workspace's ([L4]), so it is relinked even at a tracked path — as an owned link
    there is NOOP rather than SKIP."""
    target = f"{CO}/.agents/skills/alpha"
    view = SkillsView(DIR, (("alpha", link("/old/skills/alpha")),))
    ops, findings, _ = planner_skills.plan_checkout(
        CO, DIR, view, (skill(),), W, CFG, frozenset({target}), moved_from="/old")
    assert [(op.action, op.rule) for op in ops] == [(Action.CREATE, "L4")] and not findings
    source = InstructionSource(SRC, InstructionState.CONTENT)
    iview = InstructionsView((InstructionTargetView(
        "CLAUDE.md", ("claude",), False, link("/old/projects/p/AGENTS.md")),))
    ops, findings, _ = planner_instructions.plan_checkout(
        CO, source, iview, frozenset({f"{CO}/CLAUDE.md"}), W, "/old")
    assert [(op.action, op.rule) for op in ops] == [(Action.CREATE, "L4")] and not findings


# -------------------------------------------------------------- what git is asked about


def test_git_is_asked_about_foreign_links_never_about_owned_ones() -> None:
    owned_mem, foreign_mem = link("/ws/memory/a.md"), link("/x/b.md")
    mem = CheckoutView("1", CO, CheckoutState.ACTIVE, None, DIR, DIR, DIR, (
        ("a.md", owned_mem), ("b.md", foreign_mem), ("c.md", link("../../../ws/memory/c.md")),
        ("team", DIR), ("team/d.md", link("../../../../ws/memory/team/d.md")),
        ("team/e.md", link("../e.md"))))
    resources = ResourceSet(tuple(Resource(n, n, f"/ws/memory/{n}") for n in (
        "a.md", "b.md", "c.md", "team/d.md", "team/e.md")), False, None, None, ())
    skills = (skill("alpha"), skill("beta"), skill("gamma"))
    sviews = {CO: SkillsView(DIR, (("alpha", link("/ws/skills/alpha")),
                                   ("beta", link("../../elsewhere")),
                                   ("gamma", link("../../../ws/skills/gamma")),
                                   ("other", link("/x"))))}  # not selected: not asked
    aviews = {CO: (AgentSkillsView(".claude/skills", ("claude",), False, DIR, (
        ("alpha", link("../../.agents/skills/alpha")),
        ("beta", link("/ws/skills/beta")))),)}
    source = InstructionSource(SRC, InstructionState.CONTENT)
    iviews = {CO: InstructionsView((
        InstructionTargetView("AGENTS.md", ("codex",), False, link(SRC)),
        InstructionTargetView("CLAUDE.md", ("claude",), False, link("AGENTS.md")),
        InstructionTargetView(".x/I.md", ("x",), False, link("../../ws/projects/p/AGENTS.md")),
    ))}
    asked = occupied_targets((mem,), resources, skills, sviews, source, iviews, aviews)
    assert asked == {CO: [".agents/memory/b.md", ".agents/memory/team/e.md",
                          ".agents/skills/beta", ".claude/skills/alpha", "CLAUDE.md"]}


def test_nothing_foreign_asks_nothing() -> None:
    """Everything owned (the warm sync): no checkout is asked about, not even with an
    empty list (tests/test_cli_startup.py pins the process side)."""
    source = InstructionSource(SRC, InstructionState.CONTENT)
    iviews = {CO: InstructionsView((
        InstructionTargetView("AGENTS.md", ("codex",), False, link(SRC)),
        InstructionTargetView("GEMINI.md", ("gemini",), False, ABSENT)))}
    aviews = {CO: (AgentSkillsView(".claude/skills", ("claude",), False, DIR,
                                   (("alpha", link("/ws/skills/alpha")),)),)}
    empty = ResourceSet((), False, None, None, ())
    assert occupied_targets((), empty, (skill(),), {CO: SkillsView(DIR)}, source, iviews,
                            aviews) == {}


# ------------------------------------------------------------------ real repositories

CLAUDE = ('[agents.claude]\nproject_instruction_path = "CLAUDE.md"\n'
          'project_skills_path = ".claude/skills"\n')


def commit_link(co: str, rel: str, literal: str) -> None:
    Path(co, rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(literal, f"{co}/{rel}")
    git("add", "--", rel, cwd=co)
    git("commit", "-q", "-m", f"link {rel}", cwd=co)


def linked_world(ws: WS) -> str:
    """A checkout whose repository commits ``AGENTS.md``, ``CLAUDE.md -> AGENTS.md``
    (the registry's one target is ``CLAUDE.md``) and ``.claude/skills/review ->
    ../../tools/review``."""
    ws.add_skill("review")
    ws.add_agent("claude", CLAUDE)
    ws.write_instructions("demo", "# the workspace's instructions\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"AGENTS.md": "# the repository's own\n",
                                                "tools/review/SKILL.md": "# mine\n"})
    commit_link(co, "CLAUDE.md", "AGENTS.md")
    commit_link(co, ".claude/skills/review", "../../tools/review")
    ws.write_config("demo", memory=[], paths=[co], skills=["review"])
    return co


def sync(ws: WS, *args: str) -> tuple[int, dict]:
    res = invoke("--workspace", ws.root, "sync", "project", "demo", "--json", *args)
    return res.exit_code, json.loads(res.stdout)


def ops_by_target(doc: dict) -> dict[str, dict]:
    return {op["target"]: op for op in doc["operations"]}


@needs_git
def test_a_committed_claude_md_link_is_skipped_and_left_byte_identical(ws: WS) -> None:
    co = linked_world(ws)
    links = {rel: (os.lstat(f"{co}/{rel}"), os.readlink(f"{co}/{rel}"))
             for rel in ("CLAUDE.md", ".claude/skills/review")}
    code, doc = sync(ws)
    assert code == 0, doc
    ops = ops_by_target(doc)
    for rel in ("CLAUDE.md", ".claude/skills/review"):
        op = ops[f"{co}/{rel}"]
        assert (op["action"], op["reason"], op["rule"]) == ("SKIP", "tracked by git", "L1")
        st, literal = links[rel]
        now = os.lstat(f"{co}/{rel}")
        assert os.readlink(f"{co}/{rel}") == literal  # the literal, byte for byte
        assert (now.st_ino, now.st_mtime_ns, now.st_ctime_ns) == (
            st.st_ino, st.st_mtime_ns, st.st_ctime_ns)  # the same link, untouched
    assert ops[f"{co}/.agents/skills/review"]["action"] == "CREATE"
    findings = sorted((f["path"], f["severity"]) for f in doc["findings"]
                      if f["code"] == "git.tracked_target")
    assert findings == [(f"{co}/.claude/skills/review", "warning"),
                        (f"{co}/CLAUDE.md", "warning")]
    assert not [f for f in doc["findings"] if f["code"] == "git.unavailable"]
    assert not [line for line in status(co) if not line.startswith("??")]
    code, again = sync(ws)  # every later sync: the same SKIP, exit 0
    assert code == 0 and again["outcome"] == "unchanged"


@needs_git
def test_an_untracked_foreign_link_is_still_a_conflict(ws: WS) -> None:
    ws.write_instructions("demo", "# ws\n")
    ws.add_agent("claude", CLAUDE)
    co = init_repo(f"{ws.checkouts_dir}/repo", {"AGENTS.md": "a\n"})
    os.symlink("AGENTS.md", f"{co}/CLAUDE.md")  # not committed
    ws.write_config("demo", memory=[], paths=[co])
    code, doc = sync(ws)
    assert code == 1
    op = ops_by_target(doc)[f"{co}/CLAUDE.md"]
    assert op["action"] == "CONFLICT"
    assert f"remove the link {co}/CLAUDE.md if you no longer need it" in op["remedy"]
    assert not [f for f in doc["findings"] if f["code"].startswith("git.")]
    assert os.readlink(f"{co}/CLAUDE.md") == "AGENTS.md"


@needs_git
def test_git_missing_from_path_is_git_unavailable_and_the_old_conflict(
        ws: WS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    co = linked_world(ws)
    empty = tmp_path / "no-git"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, doc = sync(ws)
    assert code == 1
    ops = ops_by_target(doc)
    assert ops[f"{co}/CLAUDE.md"]["action"] == "CONFLICT"
    assert ops[f"{co}/.claude/skills/review"]["action"] == "CONFLICT"
    [finding] = [f for f in doc["findings"] if f["code"].startswith("git.")]
    assert finding["code"] == "git.unavailable" and finding["path"] == co
    assert "git is not installed" in finding["message"]
    assert "one that git does track is the repository's: keep it" in finding["message"]
    assert os.readlink(f"{co}/CLAUDE.md") == "AGENTS.md"


@needs_git
def test_a_committed_link_at_a_memory_target_stays_a_conflict_saying_tracked(ws: WS) -> None:
    ws.add_file("style.md", "s\n")
    co = init_repo(f"{ws.checkouts_dir}/repo", {"docs/style.md": "theirs\n"})
    commit_link(co, ".agents/memory/style.md", "../../docs/style.md")
    ws.write_config("demo", memory=["style.md"], paths=[co])
    code, doc = sync(ws)
    assert code == 1
    op = ops_by_target(doc)[f"{co}/.agents/memory/style.md"]
    assert op["action"] == "CONFLICT"
    assert "git tracks it: it belongs to the repository" in op["reason"]
    assert "remove the link" not in op["remedy"] and "remove 'style.md' from memory" in (
        op["remedy"])
    assert os.readlink(f"{co}/.agents/memory/style.md") == "../../docs/style.md"


@needs_git
@pytest.mark.parametrize("literal", ["AGENTS.md", "./AGENTS.md"])
def test_a_tracked_link_replaced_after_planning_makes_the_plan_stale(
        ws: WS, literal: str) -> None:
    co = linked_world(ws)
    project = ws.project("demo")
    plan = project.plan()
    assert [op.target for op in plan.operations if op.rule == "L1"] == [
        f"{co}/.claude/skills/review", f"{co}/CLAUDE.md"]
    os.rename(f"{co}/CLAUDE.md", f"{co}/CLAUDE.old")  # kept: its inode is not reused
    os.symlink(literal, f"{co}/CLAUDE.md")  # another link (the same literal, or not)
    from aikito_mem.errors import StalePlanError

    with pytest.raises(StalePlanError) as info:
        project.execute(plan)
    assert any(f"target {co}/CLAUDE.md" in d for d in info.value.differences)
    assert not os.path.lexists(f"{co}/.agents")  # nothing written


@needs_git
def test_apply_of_a_saved_plan_with_a_tracked_link(ws: WS, tmp_path: Path) -> None:
    co = linked_world(ws)
    out = str(tmp_path / "plan.toml")
    assert invoke("--workspace", ws.root, "sync", "project", "demo", "--dry-run",
                  "--out", out).exit_code == 0
    res = invoke("--workspace", ws.root, "apply", out, "--json")
    assert res.exit_code == 0, res.output
    assert os.readlink(f"{co}/CLAUDE.md") == "AGENTS.md"
    assert os.readlink(f"{co}/.agents/skills/review") == f"{ws.root}/skills/review"
