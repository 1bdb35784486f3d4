"""``--moved-from OLD`` in the per-agent skills directories ([L4], [N1]): a link
``<checkout>/.claude/skills/N`` whose literal is byte-exactly ``OLD/skills/N`` is
relinked in place like the one in ``.agents/skills``; anything else there stays as it
is, and the writer's guard refuses a relink it would not derive."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest

from aikito_mem import Project
from aikito_mem.errors import UnsafePlanError
from aikito_mem.executor.execute import execute
from aikito_mem.model import Action
from aikito_mem.world.observe import lstat_link
from tests.helpers.snapshots import snapshot
from tests.helpers.workspace import WS

CLAUDE = ('[agents.claude-code]\nproject_skills_path = ".claude/skills"\n\n'
          '[agents.claude-code.detect]\ncommands = []\npaths = []\n')


class World:
    """A workspace synced into ``.agents/skills`` and ``.claude/skills``, then moved."""

    def __init__(self, ws: WS) -> None:
        self.ws = ws
        ws.add_skill("review")
        ws.add_agent("claude-code", CLAUDE)
        self.co = ws.checkout("main")
        os.makedirs(f"{self.co}/.claude/skills")
        ws.write_config("demo", paths=[self.co], skills=["review"])
        assert ws.project("demo").sync().success
        self.old = ws.root
        self.new = f"{ws.base}/ws-moved"
        # The agent's own skill, and a link of the user's into the old root that is not
        # the canonical path of its own place (another skill's: never aikito's, [L4]).
        own = Path(self.co, ".claude", "skills", "mine")
        own.mkdir()
        (own / "SKILL.md").write_text("# mine\n")
        os.symlink(f"{self.old}/skills/review", f"{self.co}/.claude/skills/other")
        os.rename(self.old, self.new)

    def project(self) -> Project:
        return Project.load("demo", workspace=self.new)


@pytest.fixture
def w(ws: WS) -> World:
    return World(ws)


def test_without_the_flag_the_link_is_a_conflict_naming_the_flag(w: World) -> None:
    plan = w.project().plan()
    op = next(o for o in plan.operations if o.target == f"{w.co}/.claude/skills/review")
    assert op.action is Action.CONFLICT
    assert op.remedy is not None and f"--moved-from {w.old}" in op.remedy


def test_moved_from_relinks_the_per_agent_skill_link_in_place(w: World) -> None:
    target = f"{w.co}/.claude/skills/review"
    kept = snapshot(f"{w.co}/.claude/skills/mine", f"{w.co}/.claude/skills/other")
    inode = os.lstat(target).st_ino
    plan = w.project().plan(moved_from=w.old)
    op = next(o for o in plan.operations if o.target == target)
    assert (op.action, op.rule, op.reason) == (Action.CREATE, "L4", f"relinked from {w.old}")
    assert op.observed.literal == f"{w.old}/skills/review"
    assert w.project().sync(moved_from=w.old).outcome == "applied"
    assert os.readlink(target) == f"{w.new}/skills/review"
    assert os.readlink(f"{w.co}/.agents/skills/review") == f"{w.new}/skills/review"
    assert os.lstat(target).st_ino != inode
    assert snapshot(f"{w.co}/.claude/skills/mine", f"{w.co}/.claude/skills/other") == kept
    assert not [n for n in os.listdir(f"{w.co}/.claude/skills") if "aikito-relink" in n]
    again = w.project().plan()
    assert {o.action for o in again.operations} <= {Action.NOOP, Action.SKIP}


def test_the_guard_refuses_a_relink_over_another_link_there(w: World) -> None:
    plan = w.project().plan(moved_from=w.old)
    target = f"{w.co}/.claude/skills/review"
    # The link there replaced by one to another skill of the old root, recorded as it
    # is (verification passes): a relink over it is not one the engine derives.
    os.unlink(target)
    os.symlink(f"{w.old}/skills/other", target)
    theirs = lstat_link(target)
    tampered = attrs.evolve(plan, operations=tuple(
        attrs.evolve(op, observed=theirs) if op.target == target else op
        for op in plan.operations))
    before = snapshot(str(w.ws.base))
    with pytest.raises(UnsafePlanError, match="a relink replaces only the link"):
        execute(tampered)
    assert snapshot(str(w.ws.base)) == before
